package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/volplane/volplane/internal/explain"
)

// Width is the terminal width the table output fits in, explain's.
const Width = explain.Width

// JSON writes the report as indented JSON and a newline. The field names
// are documented on Report, Finding, Object and Fix.
func (r Report) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Table writes the report for people: a count by kind, the notes, then each
// finding with its fixes; no line is wider than Width, except a word that
// is wider by itself.
func (r Report) Table(w io.Writer) error {
	var b strings.Builder
	writeWords(&b, "", "  ", r.headline())
	for _, n := range r.Notes {
		writeWrapped(&b, "", "", explain.Sentence(n))
	}
	for _, f := range r.Findings {
		b.WriteString("\n")
		writeWrapped(&b, "", "  ", fmt.Sprintf("%s: %s", f.Kind, f.Object))
		writeWrapped(&b, "  ", "  ", f.Problem)
		for _, fix := range f.Fixes {
			writeWrapped(&b, "  Fix: ", "       ", fix.Says+":")
			writeCommand(&b, "    ", fix.Command)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// headline counts the findings by kind, each count and kind one word
// that wrapping keeps together.
func (r Report) headline() []string {
	if len(r.Findings) == 0 {
		return []string{"No", "problems", "found."}
	}
	counts := map[Kind]int{}
	for _, f := range r.Findings {
		counts[f.Kind]++
	}
	noun := "problems:"
	if len(r.Findings) == 1 {
		noun = "problem:"
	}
	words := []string{fmt.Sprint(len(r.Findings)), noun}
	for _, k := range Kinds() {
		if counts[k] > 0 {
			words = append(words, fmt.Sprintf("%d %s,", counts[k], k))
		}
	}
	last := len(words) - 1
	words[last] = strings.TrimSuffix(words[last], ",") + "."
	return words
}

// String names the object the way kubectl commands do.
func (o Object) String() string {
	switch o.Kind {
	case ObjectClaim:
		return "pvc " + o.Namespace + "/" + o.Name
	case ObjectVolume:
		return "pv " + o.Name
	case ObjectAttachment:
		return "volumeattachment " + o.Name
	}
	return "volume " + o.Name + " of " + o.Driver + onNode(o.Node)
}

// writeWrapped writes text in words, the first line after first, the
// others after rest, each at most Width wide.
func writeWrapped(b *strings.Builder, first, rest, text string) {
	writeWords(b, first, rest, strings.Fields(text))
}

// writeWords writes words wrapped as writeWrapped does.
func writeWords(b *strings.Builder, first, rest string, words []string) {
	for i, line := range explain.Wrap(words, Width-len(first), Width-len(rest)) {
		if i == 0 {
			b.WriteString(first + line + "\n")
		} else {
			b.WriteString(rest + line + "\n")
		}
	}
}

// writeCommand writes a command indented, so it can be pasted as is: a
// multi-line command (a manifest) line by line, a long one-line command
// broken at spaces: outside quotes with a trailing backslash, inside single
// quotes (JSON, where a newline is a space) as is.
func writeCommand(b *strings.Builder, indent, cmd string) {
	if strings.Contains(cmd, "\n") {
		for _, l := range strings.Split(cmd, "\n") {
			b.WriteString(indent + l + "\n")
		}
		return
	}
	line := indent
	for i, w := range shellWords(cmd) {
		switch {
		case i == 0:
		case len(line)+1+len(w.text)+2 > Width && w.quoted:
			b.WriteString(line + "\n")
			line = indent + "  "
		case len(line)+1+len(w.text)+2 > Width:
			b.WriteString(line + " \\\n")
			line = indent + "  "
		default:
			line += " "
		}
		line += w.text
	}
	b.WriteString(line + "\n")
}

// word is a piece of a command between spaces; quoted says the space
// before it is inside single quotes.
type word struct {
	text   string
	quoted bool
}

// shellWords splits a command at its spaces.
func shellWords(cmd string) []word {
	var words []word
	var cur strings.Builder
	quoted, startQuoted := false, false
	for _, r := range cmd {
		if r == ' ' {
			if cur.Len() > 0 {
				words = append(words, word{cur.String(), startQuoted})
				cur.Reset()
			}
			startQuoted = quoted
			continue
		}
		if r == '\'' {
			quoted = !quoted
		}
		cur.WriteRune(r)
	}
	if cur.Len() > 0 {
		words = append(words, word{cur.String(), startQuoted})
	}
	return words
}
