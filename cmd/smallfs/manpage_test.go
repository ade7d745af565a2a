package main

import (
	"os"
	"strings"
	"testing"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountopt"
)

// TestManPageNamesEverything: the manual page scripts/install puts in
// place (docs/smallfs.8) describes every command and every smallfs mount
// option, so it cannot fall behind the command's own help.
func TestManPageNamesEverything(t *testing.T) {
	b, err := os.ReadFile("../../docs/smallfs.8")
	if err != nil {
		t.Fatal(err)
	}
	page := strings.ReplaceAll(string(b), `\-`, "-")
	commandsSection := section(page, "COMMANDS")
	for _, c := range commands {
		if !strings.Contains(commandsSection, "\n.B "+c.name+"\n") {
			t.Errorf("docs/smallfs.8 has no entry for the command %s under COMMANDS", c.name)
		}
	}
	options := section(page, "MOUNT OPTIONS")
	for _, s := range mountopt.Specs() {
		if !strings.Contains(options, s.Name) {
			t.Errorf("docs/smallfs.8 does not describe the mount option %s under MOUNT OPTIONS", s.Name)
		}
	}
	if exits := section(page, "EXIT STATUS"); !strings.Contains(exits, "32 mount failure") || !strings.Contains(exits, "16 usage error") {
		t.Errorf("docs/smallfs.8's EXIT STATUS lacks the helper's or fsck's codes:\n%s", exits)
	}
}

// section returns the text of the manual page's section name, up to the
// next .SH.
func section(page, name string) string {
	_, rest, ok := strings.Cut(page, "\n.SH "+name+"\n")
	if !ok {
		return ""
	}
	body, _, _ := strings.Cut(rest, "\n.SH ")
	return body
}
