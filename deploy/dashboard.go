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

// Every query of the dashboard (a panel target's expr, a variable's
// label_values) names each metric it reads as a selector with braces,
// name{...}: that is how DashboardMetrics finds them, and it refuses any
// other bare word that is not PromQL's own.
var (
	selector    = regexp.MustCompile(`([A-Za-z_:][A-Za-z0-9_:]*)\{[^}]*\}`)
	labelValues = regexp.MustCompile(`^label_values\(([A-Za-z_:][A-Za-z0-9_:]*)\s*,\s*[A-Za-z_][A-Za-z0-9_]*\)$`)
	grouping    = regexp.MustCompile(`\b(by|without)\s*\([^)]*\)`)
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
	names := map[string]bool{}
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
		names[m[1]] = true
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
			used, err := exprMetrics(t.Expr)
			if err != nil {
				return nil, fmt.Errorf("panel %q: %w", p.Title, err)
			}
			for _, n := range used {
				names[n] = true
			}
		}
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

type dashboardPanel struct {
	Type    string           `json:"type"`
	Title   string           `json:"title"`
	Panels  []dashboardPanel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// exprMetrics returns the metrics of one PromQL expression.
func exprMetrics(expr string) ([]string, error) {
	var names []string
	for _, m := range selector.FindAllStringSubmatch(expr, -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%q reads no metric", expr)
	}
	rest := selector.ReplaceAllString(expr, " ")
	rest = grouping.ReplaceAllString(rest, " ")
	rest = quoted.ReplaceAllString(rest, " ")
	rest = ranges.ReplaceAllString(rest, " ")
	for _, w := range word.FindAllString(rest, -1) {
		if !slices.Contains(promQL, w) {
			return nil, fmt.Errorf("%q: %s is neither PromQL nor a selector name{...}", expr, w)
		}
	}
	return names, nil
}

// ScrapedSeries reads a /metrics page in Prometheus' text format and
// returns the names of the series it holds: every family's name, and for
// a histogram or summary also name_bucket (histogram), name_sum and
// name_count. The real-node test scrapes the pods with it.
func ScrapedSeries(page io.Reader) (map[string]bool, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(page)
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w", err)
	}
	list := make([]*dto.MetricFamily, 0, len(families))
	for _, f := range families {
		list = append(list, f)
	}
	return SeriesNames(list), nil
}

// SeriesNames is ScrapedSeries of families already parsed or gathered.
func SeriesNames(families []*dto.MetricFamily) map[string]bool {
	out := map[string]bool{}
	for _, f := range families {
		if len(f.GetMetric()) == 0 {
			continue
		}
		name := f.GetName()
		out[name] = true
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			out[name+"_bucket"], out[name+"_sum"], out[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			out[name+"_sum"], out[name+"_count"] = true, true
		}
	}
	return out
}

// MissingMetrics returns the dashboard's metrics that are not in series.
func MissingMetrics(series map[string]bool) ([]string, error) {
	used, err := DashboardMetrics()
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, n := range used {
		if !series[n] {
			missing = append(missing, n)
		}
	}
	return missing, nil
}
