package main

import "github.com/lethedb/lethe/cosmosrest"

// faultRules returns the fault injection rules of the handler, which its
// control endpoint /_lethe/faults sets, or nil with -faults=false.
func faultRules(on bool) *cosmosrest.Faults {
	if !on {
		return nil
	}
	return &cosmosrest.Faults{}
}
