package mountopt

import "strings"

// split cuts an option list at commas outside double quotes and removes
// the quotes, the way mount(8) reads comment="a,b".
func split(list string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, r := range list {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ',' && !quoted:
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	return append(out, cur.String())
}

// multiError joins several option errors on one line: a mount failure must
// fit the single line mount(8) shows.
type multiError []error

func (m multiError) Error() string {
	msgs := make([]string, len(m))
	for i, err := range m {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (m multiError) Unwrap() []error { return m }

func joinErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return multiError(errs)
}
