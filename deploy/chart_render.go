package deploy

import (
	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/engine"
	"helm.sh/helm/v4/pkg/strvals"
)

// RenderChart renders the chart's templates as `helm install volplane
// --set set` would (release volplane, Helm's default capabilities): file
// name → rendered text. The chart's crds/ are not templates and are not
// in it. Only tests import this package, so Helm stays out of the binary.
func RenderChart(chrt *chartv2.Chart, set string) (map[string]string, error) {
	overrides, err := strvals.Parse(set)
	if err != nil {
		return nil, err
	}
	vals, err := chartutil.ToRenderValues(chrt, overrides,
		common.ReleaseOptions{Name: "volplane", Namespace: "default", IsInstall: true, Revision: 1}, common.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	return engine.Render(chrt, vals)
}
