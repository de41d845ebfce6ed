package conformance

import "time"

// Scenario is one lifecycle scenario. Applies is pure: it says from the
// Lab's facts alone whether the driver can take the scenario and, if not,
// which capability is missing. Run acts through the Session, step by step
// (Session.Step), and returns the first step's error.
type Scenario struct {
	Name    string
	Applies func(*Lab) (ok bool, why string)
	Run     func(*Session) error
	// MinTimeout, if longer than the run's timeout, is this scenario's: one
	// whose waits are not the driver's but the cluster's (the loops' retry
	// backoff after injected faults, the pod garbage collector's pass).
	MinTimeout time.Duration
}

// Skipped is a scenario that does not apply, and why.
type Skipped struct {
	Name, Why string
}

// Scenarios is the registry, in the order they run: the simplest first,
// so that a driver failing the basics fails there and not in a later
// scenario's set-up.
func Scenarios() []Scenario {
	return []Scenario{
		dynamicMount(),
		waitForFirstConsumer(),
		staticRetain(),
		rawBlock(),
		accessModes(),
		offlineExpansion(),
		onlineExpansion(),
		modifyAttributes(),
		cloneClaim(),
		snapshotRestore(),
		groupSnapshot(),
		controllerRestart(),
		nodeRestart(),
		faultsScenario(),
		nodeFailure(),
	}
}

// Select splits the registry into the scenarios that apply to lab and the
// skipped ones with their reason.
func Select(lab *Lab) ([]Scenario, []Skipped) { return selectFrom(lab, Scenarios()) }

func selectFrom(lab *Lab, all []Scenario) (run []Scenario, skipped []Skipped) {
	for _, s := range all {
		if s.Applies == nil {
			run = append(run, s)
			continue
		}
		if ok, why := s.Applies(lab); ok {
			run = append(run, s)
		} else {
			skipped = append(skipped, Skipped{Name: s.Name, Why: why})
		}
	}
	return run, skipped
}

// always applies to every driver.
func always(*Lab) (bool, string) { return true, "" }
