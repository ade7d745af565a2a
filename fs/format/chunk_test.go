package format

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// buildChunk encodes txns into one sealed, padded chunk.
func buildChunk(h ChunkHeader, txns [][]Record, bs uint32) ([]byte, uint32) {
	b := make([]byte, ChunkHeaderSize)
	for _, txn := range txns {
		b = AppendTxn(b, txn)
	}
	h.Txns = uint32(len(txns))
	crc := SealChunk(b, h)
	return append(b, make([]byte, ChunkSize(len(b)-ChunkHeaderSize, bs)-len(b))...), crc
}

func TestChunkRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var txns [][]Record
	for range 20 {
		txn := make([]Record, 1+rng.IntN(5))
		for i := range txn {
			txn[i] = randomRecord(rng)
		}
		txns = append(txns, txn)
	}
	b, crc := buildChunk(ChunkHeader{Seq: 1000, Prev: 42, Nonce: 7}, txns, 512)
	if len(b)%512 != 0 {
		t.Fatalf("chunk of %d bytes not padded", len(b))
	}
	h, payload, err := CheckChunk(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Seq != 1000 || h.Prev != 42 || h.Nonce != 7 || h.CRC != crc || h.Txns != 20 {
		t.Fatalf("header %+v", h)
	}
	i := 0
	err = DecodeTxns(payload, h.Txns, func(j int, recs []Record) error {
		if j != i || len(recs) != len(txns[j]) {
			t.Fatalf("txn %d: %d records, want %d", j, len(recs), len(txns[j]))
		}
		for k := range recs {
			if !sameRecord(recs[k], txns[j][k]) {
				t.Fatalf("txn %d record %d differs", j, k)
			}
		}
		i++
		return nil
	})
	if err != nil || i != 20 {
		t.Fatalf("decoded %d: %v", i, err)
	}
	// Any flipped bit in header or payload is caught.
	for pos := range ChunkHeaderSize + len(payload) {
		b[pos] ^= 0x10
		if _, _, err := CheckChunk(b); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip at %d: %v", pos, err)
		}
		b[pos] ^= 0x10
	}
	if _, _, err := CheckChunk(b[:ChunkHeaderSize+len(payload)-1]); !errors.Is(err, ErrCorrupt) {
		t.Errorf("truncated: %v", err)
	}
	if err := DecodeTxns(payload, 21, func(int, []Record) error { return nil }); !errors.Is(err, ErrCorrupt) {
		t.Errorf("too few transactions: %v", err)
	}
	if err := DecodeTxns(payload, 19, func(int, []Record) error { return nil }); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bytes left over: %v", err)
	}
}

func TestWrapChunk(t *testing.T) {
	b := make([]byte, 512)
	SealChunk(b[:ChunkHeaderSize], ChunkHeader{Flags: ChunkFlagWrap, Seq: 9, Prev: 3})
	h, payload, err := CheckChunk(b)
	if err != nil || h.Flags != ChunkFlagWrap || len(payload) != 0 || h.Seq != 9 {
		t.Fatalf("wrap chunk: %+v %v", h, err)
	}
	// A wrap chunk claiming transactions is refused.
	bad := make([]byte, ChunkHeaderSize+1)
	SealChunk(bad, ChunkHeader{Flags: ChunkFlagWrap, Txns: 1})
	if _, _, err := CheckChunk(bad); !errors.Is(err, ErrCorrupt) {
		t.Errorf("wrap with payload: %v", err)
	}
}
