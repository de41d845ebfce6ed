package adversarial

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/hostpath"
)

const (
	// victimNS holds the claims the tenant must not reach; evilNS is the
	// tenant's own.
	victimNS = "victim"
	evilNS   = "evil"
	// tenantSA is the tenant's ServiceAccount in evilNS.
	tenantSA = "tenant"
	// firstNodeClass and firstNodeWaitClass are node-local classes whose
	// allowedTopologies name the first node only.
	firstNodeClass     = "only-first-node"
	firstNodeWaitClass = "only-first-node-wffc"
)

// onlyOn is a node-local class allowed on node only.
func onlyOn(name, node string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       hostpath.DriverName,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(mode),
		AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
			{Key: hostpath.TopologyKey, Values: []string{node}}}}},
		AllowVolumeExpansion: ptr.To(true),
	}
}

// namespace creates ns and waits for its default ServiceAccount (pods are
// refused until the controller manager made it).
func namespace(ctx context.Context, client kubernetes.Interface, ns string) error {
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	return poll(ctx, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// editor is the client of a ServiceAccount of ns bound to the built-in
// ClusterRole edit in ns, and to nothing else, authenticated by a token
// the TokenRequest API minted, as a pod of that account would be.
func editor(ctx context.Context, cp *cluster.ControlPlane, ns string) (kubernetes.Interface, error) {
	admin := cp.Client
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: tenantSA}}
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("service account: %w", err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: tenantSA + "-edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: tenantSA, Namespace: ns}},
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("role binding: %w", err)
	}
	// edit is an aggregated role: its rules are filled in by the
	// controller manager, some time after the API server started.
	user := "system:serviceaccount:" + ns + ":" + tenantSA
	err := poll(ctx, func(ctx context.Context) (bool, error) {
		r, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "persistentvolumeclaims"}}}, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s never allowed to create claims: %w", user, err)
	}
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, tenantSA, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token request: %w", err)
	}
	cfg := rest.AnonymousClientConfig(cp.RESTConfig)
	cfg.BearerToken = tr.Status.Token
	cfg.QPS, cfg.Burst = -1, 0
	return kubernetes.NewForConfig(cfg)
}

func poll(ctx context.Context, cond wait.ConditionWithContextFunc) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, cond)
}

// classes the tests use besides their own.
const (
	localClass   = bundle.ImmediateClass
	waitClass    = bundle.WaitClass
	networkClass = bundle.NetworkClass
)
