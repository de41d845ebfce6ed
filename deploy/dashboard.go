package deploy

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Dashboard is the Grafana dashboard over volplane's metrics
// (deploy/dashboard.json): import it into Grafana with a Prometheus data
// source that scrapes the controller's and the node pods' metrics ports.
//
//go:embed dashboard.json
var Dashboard []byte

// Which process serves what the dashboard reads, and when (for a test that
// scrapes the pods of deploy/, where each metric appears in one of them):
//   - both the controller (port 9742) and every node pod's provisioner
//     (9743): volplane_leading, process_*, go_goroutines;
//   - the controller's leader, from the binder: pv_collector_* (once such
//     claims or volumes exist: a Pending claim for the unbound claims, an
//     Available volume for the unbound volumes), volume_operation_total_seconds
//     (once a provisioning or deletion finished), volume_operation_total_errors
//     (once a Delete volume no one can delete went Failed),
//     retroactive_storageclass_errors_total and volplane_binder_resyncs_total
//     (at once); from attachdetach: attachdetach_controller_total_volumes and
//     storage_count_attachable_volumes_in_use (once a volume of a driver that
//     attaches is in use: none of deploy/'s node-local driver);
//   - whoever calls a driver: csi_sidecar_operations_seconds (the node pods'
//     provisioner and resizer for the bundled driver: CreateVolume,
//     DeleteVolume, ControllerExpandVolume; an attacher beside a driver that
//     attaches: ControllerPublishVolume);
//   - any loop: DashboardRareMetrics.
//
// DashboardRareMetrics are the dashboard's metrics that appear only once
// something rare happened, by what that is: a scrape after healthy work
// lacks them.
var DashboardRareMetrics = map[string]string{
	"volplane_loop_stuck_keys":       "a key failing for 5 minutes (loop.DefaultStuckAfter) or given up",
	"volplane_loop_stuck_keys_total": "a key failing for 5 minutes (loop.DefaultStuckAfter) or given up",
}

// Every query of the dashboard (a panel target's expr, a variable's
// label_values) names each metric it reads as a selector with braces,
// name{...}: that is how DashboardMetrics finds them, and it refuses any
// other bare word that is not PromQL's own.
var (
	selector    = regexp.MustCompile(`([A-Za-z_:][A-Za-z0-9_:]*)\{[^}]*\}`)
	labelValues = regexp.MustCompile(`^label_values\(([A-Za-z_:][A-Za-z0-9_:]*)\s*,\s*[A-Za-z_][A-Za-z0-9_]*\)$`)
	grouping    = regexp.MustCompile(`\b(by|without)\s*\(([^)]*)\)`)
	matchers    = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"`)
	quoted      = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	ranges      = regexp.MustCompile(`\[[^\]]*\]`)
	word        = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
)

// promQL are the words of PromQL the dashboard's queries use besides
// metric names.
var promQL = []string{"sum", "rate", "increase", "changes", "histogram_quantile", "by", "without", "and", "or", "unless"}

// DashboardMetrics returns the metric names the dashboard's queries read,
// sorted, as a scrape of /metrics names its series (a histogram's
// name_bucket and name_count, a counter's name_total).
func DashboardMetrics() ([]string, error) {
	uses, err := dashboardUses()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(uses))
	for n := range uses {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// targetLabels are added by Prometheus to every series it scrapes: no
// process serves them.
var targetLabels = []string{"job", "instance", "pod", "namespace", "container"}

// dashboardUses returns each metric the dashboard reads with the labels
// its queries match or group it by (target labels aside).
func dashboardUses() (map[string]map[string]bool, error) {
	var d struct {
		Panels     []dashboardPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(Dashboard, &d); err != nil {
		return nil, fmt.Errorf("dashboard.json: %w", err)
	}
	names := map[string]map[string]bool{}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q := v.Query
		if m, ok := q.(map[string]any); ok {
			q = m["query"]
		}
		s, _ := q.(string)
		m := labelValues.FindStringSubmatch(s)
		if m == nil {
			return nil, fmt.Errorf("variable %s: %q is no label_values(metric, label)", v.Name, s)
		}
		names[m[1]] = map[string]bool{}
	}
	var panels []dashboardPanel
	for _, p := range d.Panels {
		panels = append(append(panels, p), p.Panels...)
	}
	for _, p := range panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			return nil, fmt.Errorf("panel %q has no query", p.Title)
		}
		for _, t := range p.Targets {
			used, labels, err := exprMetrics(t.Expr)
			if err != nil {
				return nil, fmt.Errorf("panel %q: %w", p.Title, err)
			}
			for _, n := range used {
				if names[n] == nil {
					names[n] = map[string]bool{}
				}
				for _, l := range labels {
					names[n][l] = true
				}
			}
		}
	}
	return names, nil
}

type dashboardPanel struct {
	Type    string           `json:"type"`
	Title   string           `json:"title"`
	Panels  []dashboardPanel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// exprMetrics returns the metrics of one PromQL expression and the labels
// it matches them on or groups them by, target labels aside. Each query
// reads one metric, so that every label is that metric's.
func exprMetrics(expr string) (names, labels []string, err error) {
	for _, m := range selector.FindAllStringSubmatch(expr, -1) {
		names = append(names, m[1])
		for _, matcher := range matchers.FindAllStringSubmatch(m[0], -1) {
			labels = append(labels, matcher[1])
		}
	}
	for _, g := range grouping.FindAllStringSubmatch(expr, -1) {
		labels = append(labels, word.FindAllString(g[2], -1)...)
	}
	labels = slices.DeleteFunc(labels, func(l string) bool { return slices.Contains(targetLabels, l) })
	slices.Sort(labels)
	labels = slices.Compact(labels)
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("%q reads no metric", expr)
	}
	if len(slices.Compact(slices.Sorted(slices.Values(names)))) > 1 && len(labels) > 0 {
		return nil, nil, fmt.Errorf("%q: labels of a query over several metrics cannot be checked", expr)
	}
	rest := selector.ReplaceAllString(expr, " ")
	rest = grouping.ReplaceAllString(rest, " ")
	rest = quoted.ReplaceAllString(rest, " ")
	rest = ranges.ReplaceAllString(rest, " ")
	for _, w := range word.FindAllString(rest, -1) {
		if !slices.Contains(promQL, w) {
			return nil, nil, fmt.Errorf("%q: %s is neither PromQL nor a selector name{...}", expr, w)
		}
	}
	return names, labels, nil
}

// Series are the series of a scrape: each name with the label names its
// samples carry.
type Series map[string]map[string]bool

// ScrapedSeries reads a /metrics page in Prometheus' text format and
// returns the series it holds: every family's name, and for a histogram
// also name_bucket (with le), name_sum and name_count, for a summary
// name_sum and name_count. The real-node test scrapes the pods with it
// (merge the pods' Series before MissingMetrics: each metric is served by
// one of them).
func ScrapedSeries(page io.Reader) (Series, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(page)
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w", err)
	}
	list := make([]*dto.MetricFamily, 0, len(families))
	for _, f := range families {
		list = append(list, f)
	}
	return SeriesOf(list), nil
}

// SeriesOf is ScrapedSeries of families already parsed or gathered.
func SeriesOf(families []*dto.MetricFamily) Series {
	out := Series{}
	add := func(name string, labels []*dto.LabelPair, extra ...string) {
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		for _, l := range labels {
			out[name][l.GetName()] = true
		}
		for _, l := range extra {
			out[name][l] = true
		}
	}
	for _, f := range families {
		name := f.GetName()
		for _, m := range f.GetMetric() {
			add(name, m.GetLabel())
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				add(name+"_bucket", m.GetLabel(), "le")
				add(name+"_sum", m.GetLabel())
				add(name+"_count", m.GetLabel())
			case dto.MetricType_SUMMARY:
				add(name+"_sum", m.GetLabel())
				add(name+"_count", m.GetLabel())
			}
		}
	}
	return out
}

// Merge adds other's series to s.
func (s Series) Merge(other Series) {
	for name, labels := range other {
		if s[name] == nil {
			s[name] = map[string]bool{}
		}
		for l := range labels {
			s[name][l] = true
		}
	}
}

// MissingMetrics returns what the dashboard reads that series lack: a
// metric's name, or name{label} for a label its queries match or group by
// that the metric does not carry.
func MissingMetrics(series Series) ([]string, error) {
	uses, err := dashboardUses()
	if err != nil {
		return nil, err
	}
	var missing []string
	for name, labels := range uses {
		have, ok := series[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		for l := range labels {
			if !have[l] {
				missing = append(missing, name+"{"+l+"}")
			}
		}
	}
	sort.Strings(missing)
	return missing, nil
}
