package deploy

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// The dashboard covers what an operator watches, and every query names its
// metrics so that DashboardMetrics finds them (test/e2e/dashboard then
// checks each against a running volplane).
func TestDashboardReadsVolplanesMetrics(t *testing.T) {
	used, err := DashboardMetrics()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"volplane_leading",                      // leader
		"pv_collector_bound_pvc_count",          // binds
		"volume_operation_total_seconds_count",  // provisioning rate
		"csi_sidecar_operations_seconds_count",  // provisioning, attach, expansion rates and errors
		"attachdetach_controller_total_volumes", // attachments
		"volume_operation_total_errors",         // errors
		"volplane_loop_stuck_keys",              // stuck work
	} {
		if !slices.Contains(used, want) {
			t.Errorf("the dashboard does not read %s", want)
		}
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			ID      int    `json:"id"`
			Type    string `json:"type"`
			Title   string `json:"title"`
			GridPos struct{ X, W int }
			Targets []struct {
				Expr       string `json:"expr"`
				Datasource struct {
					UID string `json:"uid"`
				} `json:"datasource"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(Dashboard, &d); err != nil {
		t.Fatal(err)
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q is wider than the dashboard", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q reads data source %q, not the dashboard's variable", p.Title, tg.Datasource.UID)
			}
			if !strings.Contains(tg.Expr, `job=~"$job"`) {
				t.Errorf("panel %q: %s is not filtered by $job", p.Title, tg.Expr)
			}
		}
	}
	if d.UID == "" || len(d.Panels) < 15 {
		t.Errorf("uid %q, %d panels", d.UID, len(d.Panels))
	}
}

func TestExprMetrics(t *testing.T) {
	for expr, want := range map[string]string{
		`sum by (le, method_name) (rate(csi_sidecar_operations_seconds_bucket{job=~"$job", grpc_status_code!="OK"}[$__rate_interval]))`: "csi_sidecar_operations_seconds_bucket: grpc_status_code le method_name",
		`volplane_leading{job=~"$job"} or up{job="x"}`:                                  "volplane_leading up: ",
		`rate(volplane_binder_resyncs_total[5m])`:                                       "error", // a metric without braces
		`sum(rate(volplane_leading{job="x"}[1m])) by (pod)`:                             "volplane_leading: ",
		`sum by (state) (a{job="x"}) / sum by (state) (b{job="x"})`:                     "error", // whose label?
		`histogram_quantile(0.5, sum by (le) (rate(h_bucket{operation_name="p"}[1m])))`: "h_bucket: le operation_name",
		`1 + 2`: "error",
	} {
		names, labels, err := exprMetrics(expr)
		got := strings.Join(names, " ") + ": " + strings.Join(labels, " ")
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("exprMetrics(%s) = %q (%v), want %q", expr, got, err, want)
		}
	}
}

func TestScrapedSeries(t *testing.T) {
	page := `# HELP h a histogram
# TYPE h histogram
h_bucket{op="a",le="1"} 1
h_bucket{op="a",le="+Inf"} 1
h_sum{op="a"} 0.5
h_count{op="a"} 1
# HELP c_total a counter
# TYPE c_total counter
c_total 3
# HELP g a gauge
# TYPE g gauge
g{x="y"} 1
`
	series, err := ScrapedSeries(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	for name, labels := range map[string]string{"h_bucket": "le op", "h_count": "op", "h_sum": "op", "c_total": "", "g": "x"} {
		have, ok := series[name]
		var got []string
		for l := range have {
			got = append(got, l)
		}
		slices.Sort(got)
		if !ok || strings.Join(got, " ") != labels {
			t.Errorf("%s: %v (%v), want labels %q", name, got, ok, labels)
		}
	}
	missing, err := MissingMetrics(Series{"volplane_leading": {}, "pv_collector_bound_pvc_count": {"namespace": true}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(missing, "pv_collector_bound_pvc_count{storage_class}") || slices.Contains(missing, "volplane_leading") ||
		!slices.Contains(missing, "csi_sidecar_operations_seconds_count") {
		t.Errorf("missing %v", missing)
	}
}

// The rare metrics are the dashboard's.
func TestDashboardRareMetricsAreRead(t *testing.T) {
	used, err := DashboardMetrics()
	if err != nil {
		t.Fatal(err)
	}
	for m := range DashboardRareMetrics {
		if !slices.Contains(used, m) {
			t.Errorf("%s is in DashboardRareMetrics but no query reads it", m)
		}
	}
}
