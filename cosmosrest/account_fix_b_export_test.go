package cosmosrest

// HoldDelivery takes every change on its way to region, as a delivery
// takes the changes due, and returns what applies them, as that delivery
// goes on to (later: after whatever the test makes happen in between).
func HoldDelivery(a *Account, region string) func() {
	n := a.byName[region]
	taken := a.sched.All(n.name)
	return func() {
		n.deliver.Lock()
		defer n.deliver.Unlock()
		n.apply(taken)
	}
}
