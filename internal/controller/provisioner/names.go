package provisioner

// eventComponentSuffix follows the driver's name in the event source, as
// the external-provisioner's "<driver>_<identity>".
const eventComponentSuffix = "_volplane"

// EventComponent is the event source of the claim events for driver.
func EventComponent(driver string) string { return driver + eventComponentSuffix }
