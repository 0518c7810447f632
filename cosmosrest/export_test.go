package cosmosrest

import "time"

// SetBodyTimeout sets how long h waits for a request body (bodyReadTimeout).
func SetBodyTimeout(h *Handler, d time.Duration) { h.bodyTimeout = d }

// Paced returns how many times h's long query pages gave way (giveWay).
func Paced(h *Handler) int64 { return h.paced.Load() }
