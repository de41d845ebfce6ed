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
// finding with its fixes, the risk of a fix before its command; no line is
// wider than Width, except a word that is wider by itself and the lines of
// a here-document, which are written as they are, from the first column,
// so that they paste as they are.
func (r Report) Table(w io.Writer) error {
	var b strings.Builder
	writeWords(&b, "", "  ", r.headline())
	for _, n := range r.Notes {
		writeWrapped(&b, "", "", explain.Sentence(n))
	}
	for _, f := range r.Findings {
		b.WriteString("\n")
		label := string(f.Kind)
		if f.Severity == SeverityInfo {
			label += " (info)"
		}
		writeWrapped(&b, "", "  ", fmt.Sprintf("%s: %s", label, f.Object))
		writeWrapped(&b, "  ", "  ", f.Problem)
		for _, fix := range f.Fixes {
			writeWrapped(&b, "  Fix: ", "       ", fix.Says+":")
			if fix.Risk != "" {
				writeWrapped(&b, "  Risk: ", "        ", explain.Sentence(fix.Risk))
			}
			writeCommand(&b, "    ", fix.Command)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// headline counts the problems by kind, then the information by kind,
// each count and kind one word that wrapping keeps together.
func (r Report) headline() []string {
	problems := r.Problems()
	words := []string{"No", "problems", "found."}
	if problems > 0 {
		noun := "problems:"
		if problems == 1 {
			noun = "problem:"
		}
		words = append([]string{fmt.Sprint(problems), noun}, countKinds(r.Findings, SeverityProblem)...)
	}
	if problems < len(r.Findings) {
		words = append(words, "For", "information:")
		words = append(words, countKinds(r.Findings, SeverityInfo)...)
	}
	return words
}

// countKinds is "N kind," for each kind of the findings of severity, the
// last ending in a full stop.
func countKinds(fs []Finding, severity Severity) []string {
	counts := map[Kind]int{}
	for _, f := range fs {
		if f.Severity == severity {
			counts[f.Kind]++
		}
	}
	var words []string
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
	case ObjectSnapshot:
		return "volumesnapshot " + o.Namespace + "/" + o.Name
	case ObjectContent:
		return "volumesnapshotcontent " + o.Name
	case ObjectBackendSnapshot:
		return "snapshot " + o.Name + " of " + o.Driver + onNode(o.Node)
	}
	return "volume " + o.Name + " of " + o.Driver + onNode(o.Node)
}

// writeWrapped writes text in words, the first line after first, the
// others after rest, each at most Width wide.
// Prose may quote what users and drivers wrote (names, messages): only
// its printable text reaches the terminal.
func writeWrapped(b *strings.Builder, first, rest, text string) {
	writeWords(b, first, rest, strings.Fields(explain.Printable(text)))
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

// writeCommand writes a command so it can be pasted as is: a multi-line
// command (a manifest in a here-document, whose end must start its line)
// as it is, from the first column; a one-line command indented, broken at
// spaces when long: outside quotes with a trailing backslash, inside
// single quotes (JSON, where a newline is a space) as is.
func writeCommand(b *strings.Builder, indent, cmd string) {
	if strings.Contains(cmd, "\n") {
		b.WriteString(cmd + "\n")
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
