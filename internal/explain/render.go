package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Width is the terminal width the table output fits in.
const Width = 80

// keyWidth is the width of the key column of the table output.
const keyWidth = 15

// perGroup is how many verdicts of one reason the table lists; -o json
// lists them all.
const perGroup = 5

// JSON writes a report as indented JSON followed by a newline.
func JSON(w io.Writer, report any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(report)
}

// table writes key: value lines wrapped to Width, remembering the first
// write error.
type table struct {
	w   io.Writer
	err error
}

func (t *table) printf(format string, args ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format, args...)
	}
}

// field writes "Key:" and the value wrapped beside it; nothing for "".
func (t *table) field(key, value string) {
	if value == "" {
		return
	}
	lines := wrap(Printable(value), Width-keyWidth)
	if overflows(lines[0], keyWidth) {
		t.printf("%s\n", key+":")
		lines = append([]string{""}, lines...)
	} else {
		t.printf("%-*s%s\n", keyWidth, key+":", lines[0])
	}
	for _, l := range lines[1:] {
		t.printf("%s%s\n", indentFor(l, keyWidth), l)
	}
}

// overflows says whether line, at indent, goes past Width (a word longer
// than a line: a name of 64 hex digits).
func overflows(line string, indent int) bool { return indent+len([]rune(line)) > Width }

// indentFor is indent spaces, fewer (at least one: the line stays under
// its key) for a line that would go past Width.
func indentFor(line string, indent int) string {
	if overflows(line, indent) {
		indent = max(1, Width-len([]rune(line)))
	}
	return strings.Repeat(" ", indent)
}

// item writes "name  text" at indent, text wrapped under itself.
func (t *table) item(indent int, name string, nameWidth int, text string) {
	name, text = Printable(name), Printable(text)
	pad := indent + nameWidth + 2
	if pad > Width/2 {
		pad = indent + 4
		t.printf("%s%s\n", strings.Repeat(" ", indent), name)
		for _, l := range wrap(text, Width-pad) {
			t.printf("%s%s\n", strings.Repeat(" ", pad), l)
		}
		return
	}
	lines := wrap(text, Width-pad)
	t.printf("%s%-*s  %s\n", strings.Repeat(" ", indent), nameWidth, name, lines[0])
	for _, l := range lines[1:] {
		t.printf("%s%s\n", strings.Repeat(" ", pad), l)
	}
}

// Printable is s as it may reach a terminal: annotations, event messages
// and other text users write are quoted in reports, and an escape sequence
// or a bidirectional override in them must not act on the reader's
// terminal nor disguise the line. Invalid UTF-8, control characters (other
// than whitespace, which wrapping turns into spaces) and bidi controls
// become U+FFFD.
func Printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return r
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(s, string(utf8.RuneError)))
}

// wrap breaks text into lines of at most width runes at spaces.
func wrap(text string, width int) []string { return Wrap(strings.Fields(text), width, width) }

// Wrap fills lines with words: the first line at most first runes wide, the
// others at most rest; a word longer than its line gets a line of its own.
func Wrap(words []string, first, rest int) []string {
	if len(words) == 0 {
		return []string{""}
	}
	var lines []string
	line, width := words[0], first
	for _, w := range words[1:] {
		if len([]rune(line))+1+len([]rune(w)) > width {
			lines = append(lines, line)
			line, width = w, rest
			continue
		}
		line += " " + w
	}
	return append(lines, line)
}

// verdicts lists the verdicts grouped as the tally counts them, at most
// perGroup of each.
func (t *table) verdicts(c *Considered) {
	for _, g := range c.Tally.Groups {
		var group []Verdict
		for _, v := range c.Verdicts {
			if v.Reason == g.Reason {
				group = append(group, v)
			}
		}
		if len(group) == 0 {
			continue // counted but not listed (another class, not read)
		}
		t.printf("  %s (%d):\n", g.Reason.Short(), g.Count)
		width := 0
		for _, v := range group[:min(len(group), perGroup)] {
			width = max(width, len(v.Name))
		}
		for _, v := range group[:min(len(group), perGroup)] {
			t.item(4, v.Name, width, orDash(v.Detail))
		}
		if len(group) > perGroup {
			t.printf("    ... and %d more (-o json lists them all)\n", len(group)-perGroup)
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// nodes lists a volume's state per node.
func (t *table) nodes(uses []NodeUse) {
	var names, lines []string
	for _, u := range uses {
		names, lines = append(names, u.Node), append(lines, u.Summary)
	}
	t.perNode("Nodes", names, lines)
}

// perNode writes section title, one line per node (lines[i] of names[i]),
// the node names in one column; nothing when there is no node.
func (t *table) perNode(title string, names, lines []string) {
	if len(names) == 0 {
		return
	}
	t.printf("%s:\n", title)
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for i, n := range names {
		t.item(2, n, width, lines[i])
	}
}
