package cosmosrest

import "time"

// SetBodyTimeout sets how long h waits for a request body (bodyReadTimeout).
func SetBodyTimeout(h *Handler, d time.Duration) { h.bodyTimeout = d }
