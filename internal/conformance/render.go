package conformance

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText writes the report as a table, one row per scenario, then the
// details of each failure.
func (r Report) WriteText(w io.Writer) error {
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tSTATUS\tTIME\tREASON")
	for _, res := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", res.Name, res.Status, seconds(res), oneLine(res.Reason))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// A row without a reason would end in the padding.
	for _, l := range strings.SplitAfter(table.String(), "\n") {
		if _, err := io.WriteString(w, strings.TrimRight(l, " \n")+strings.Repeat("\n", strings.Count(l, "\n"))); err != nil {
			return err
		}
	}
	for _, res := range r.Results {
		if res.Failure == nil {
			continue
		}
		if _, err := fmt.Fprintf(w, "\n%s failed:\n%s", res.Name, indent(res.Failure.Body(), "  ")); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "\n%d passed, %d failed, %d skipped\n", r.Count(Pass), r.Count(Fail), r.Count(Skip))
	return err
}

// Body is the failure in lines: what WriteText and the JUnit failure
// element show.
func (f *Failure) Body() string {
	var b strings.Builder
	line := func(key, value string) {
		if value != "" {
			fmt.Fprintf(&b, "%-11s %s\n", key+":", oneLine(value))
		}
	}
	line("step", f.Step)
	line("error", f.Error)
	line("object", f.Object)
	line("CSI call", f.CSICall)
	line("event", f.Event)
	for _, inv := range f.Invariants {
		line("invariant", inv)
	}
	if f.Explain != "" {
		b.WriteString("explain:\n" + indent(f.Explain, "  "))
	}
	return b.String()
}

// WriteJSON writes the report as indented JSON: its field names are
// stable, for CI.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// The JUnit XML schema CI systems read: one suite, a case per scenario.
type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	Failure   *junitMessage `xml:"failure,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	// CDATA keeps the body's lines readable where CI shows it.
	Body string `xml:",cdata"`
}

// SuiteName is the JUnit testsuite's name.
const SuiteName = "volplane-conformance"

// WriteJUnit writes the report as JUnit XML.
func (r Report) WriteJUnit(w io.Writer) error { return writeXML(w, r.suite()) }

// suite is the report as a JUnit testsuite.
func (r Report) suite() junitSuite {
	s := junitSuite{Name: SuiteName, Tests: len(r.Results), Failures: r.Count(Fail), Skipped: r.Count(Skip)}
	var total time.Duration
	for _, res := range r.Results {
		total += res.Duration
		c := junitCase{Name: res.Name, ClassName: SuiteName + "." + r.Driver, Time: seconds(res)}
		switch res.Status {
		case Skip:
			c.Skipped = &junitMessage{Message: res.Reason}
		case Fail:
			c.Failure = &junitMessage{Message: res.Reason}
			if res.Failure != nil {
				c.Failure.Body = res.Failure.Body()
			}
		}
		s.Cases = append(s.Cases, c)
	}
	s.Time = fmt.Sprintf("%.3f", total.Seconds())
	return s
}

func writeXML(w io.Writer, v any) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// Reports are the reports of one run, one per driver under test.
type Reports []Report

// Failed is how many scenarios failed, over every driver.
func (rs Reports) Failed() int {
	n := 0
	for _, r := range rs {
		n += r.Count(Fail)
	}
	return n
}

// WriteText writes each driver's report under a line naming it.
func (rs Reports) WriteText(w io.Writer) error {
	for i, r := range rs {
		sep := "\n"
		if i == 0 {
			sep = ""
		}
		if _, err := fmt.Fprintf(w, "%sDriver %s\n", sep, r.Driver); err != nil {
			return err
		}
		if err := r.WriteText(w); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON writes the reports as an indented JSON array.
func (rs Reports) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode([]Report(rs))
}

// WriteJUnit writes the reports as JUnit XML: a testsuites element with
// one suite per driver (its cases' classname names the driver).
func (rs Reports) WriteJUnit(w io.Writer) error {
	all := junitSuites{}
	for _, r := range rs {
		all.Suites = append(all.Suites, r.suite())
	}
	return writeXML(w, all)
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

func seconds(res Result) string { return fmt.Sprintf("%.3f", res.Duration.Seconds()) }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func indent(s, prefix string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(prefix + l + "\n")
	}
	return b.String()
}
