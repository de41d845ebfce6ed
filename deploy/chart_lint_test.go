package deploy

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/strvals"
	"sigs.k8s.io/yaml"
)

// `helm lint deploy/chart` finds nothing above INFO (an icon is
// recommended), with the default values and with README's.
func TestChartLints(t *testing.T) {
	for _, set := range []string{"", ChartSetExample} {
		values, err := strvals.Parse(set)
		if err != nil {
			t.Fatal(err)
		}
		result := lint.RunAll(ChartDir, values, "default")
		for _, m := range result.Messages {
			if m.Severity > support.InfoSev {
				t.Errorf("helm lint --set %q: %v", set, m)
			}
		}
	}
}

// README's Helm commands install this chart, and every value they set is
// one the chart has; its `--set` example is the one TestChartValuesLand
// checks.
func TestREADMEHelmCommands(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	if !strings.Contains(text, "`--set "+ChartSetExample+"`") {
		t.Errorf("README does not show the --set example TestChartValuesLand checks: %s", ChartSetExample)
	}
	commands := regexp.MustCompile(`(?m)^(?:# or: )?helm (?:install|upgrade) .*$`).FindAllString(text, -1)
	if len(commands) < 3 {
		t.Fatalf("README has %d helm install/upgrade commands", len(commands))
	}
	sets := []string{ChartSetExample}
	for _, c := range commands {
		if !strings.Contains(c, " deploy/chart") {
			t.Errorf("%q does not install deploy/chart", c)
		}
		if m := regexp.MustCompile(`--set (\S+)`).FindStringSubmatch(c); m != nil {
			sets = append(sets, m[1])
		}
	}
	defaults, err := os.ReadFile(ChartDir + "/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var have map[string]any
	if err := yaml.Unmarshal(defaults, &have); err != nil {
		t.Fatal(err)
	}
	for _, set := range sets {
		vals, err := strvals.Parse(set)
		if err != nil {
			t.Errorf("--set %s: %v", set, err)
			continue
		}
		for _, path := range leafPaths(vals, "") {
			if !hasPath(have, path) {
				t.Errorf("--set %s sets %s, which values.yaml does not have", set, path)
			}
		}
	}
}

// leafPaths are the dotted paths of vals' leaves.
func leafPaths(vals map[string]any, prefix string) []string {
	var out []string
	for k, v := range vals {
		if m, ok := v.(map[string]any); ok {
			out = append(out, leafPaths(m, prefix+k+".")...)
			continue
		}
		out = append(out, prefix+k)
	}
	return out
}

// hasPath says whether the dotted path is a value of defaults, or lies
// under a map the chart leaves to the operator (an empty one, such as
// nodeSelector).
func hasPath(defaults map[string]any, path string) bool {
	var v any = defaults
	for _, key := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if len(m) == 0 {
			return true
		}
		if v, ok = m[key]; !ok {
			return false
		}
	}
	return true
}
