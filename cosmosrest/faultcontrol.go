package cosmosrest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// faultsPath is the path of the control endpoint of Config.Faults.
const faultsPath = "/_lethe/faults"

// faultRuleJSON is a fault rule on the control endpoint's wire.
type faultRuleJSON struct {
	ID        string `json:"id"`
	Condition struct {
		OperationType FaultOperation  `json:"operationType,omitempty"`
		Database      string          `json:"database,omitempty"`
		Container     string          `json:"container,omitempty"`
		PartitionKey  json.RawMessage `json:"partitionKey,omitempty"`
	} `json:"condition"`
	Result struct {
		StatusCode    int   `json:"statusCode,omitempty"`
		SubStatusCode int   `json:"subStatusCode,omitempty"`
		RetryAfterMS  int64 `json:"retryAfterMs,omitempty"`
		DelayMS       int64 `json:"delayMs,omitempty"`
	} `json:"result"`
	HitLimit      int     `json:"hitLimit,omitempty"`
	InjectionRate float64 `json:"injectionRate,omitempty"`
	Seed          uint64  `json:"seed,omitempty"`
	HitCount      *int    `json:"hitCount,omitempty"` // in answers only
}

func faultRuleToJSON(s FaultRuleStatus) faultRuleJSON {
	r := s.Rule
	var j faultRuleJSON
	j.ID = r.ID
	j.Condition.OperationType = r.Condition.OperationType
	j.Condition.Database, j.Condition.Container = r.Condition.Database, r.Condition.Container
	if pk := r.Condition.PartitionKey; pk != nil {
		j.Condition.PartitionKey = json.RawMessage(pk.String())
	}
	j.Result.StatusCode, j.Result.SubStatusCode = r.Result.StatusCode, r.Result.SubStatusCode
	j.Result.RetryAfterMS, j.Result.DelayMS = r.Result.RetryAfter.Milliseconds(), r.Result.Delay.Milliseconds()
	j.HitLimit, j.InjectionRate, j.Seed = r.HitLimit, r.InjectionRate, r.Seed
	hits := s.HitCount
	j.HitCount = &hits
	return j
}

func (j *faultRuleJSON) rule() (FaultRule, error) {
	r := FaultRule{ID: j.ID, HitLimit: j.HitLimit, InjectionRate: j.InjectionRate, Seed: j.Seed}
	r.Condition = FaultCondition{OperationType: j.Condition.OperationType, Database: j.Condition.Database, Container: j.Condition.Container}
	if raw := j.Condition.PartitionKey; len(raw) > 0 && string(raw) != "null" {
		pk, err := parsePKHeader(string(raw))
		if err != nil {
			return r, fmt.Errorf("condition.partitionKey: %v", err)
		}
		r.Condition.PartitionKey = &pk
	}
	const maxMS = int64(MaxFaultDelay / time.Millisecond)
	if j.Result.RetryAfterMS < 0 || j.Result.RetryAfterMS > maxMS || j.Result.DelayMS < 0 || j.Result.DelayMS > maxMS {
		return r, fmt.Errorf("result.retryAfterMs and result.delayMs must be between 0 and %d", maxMS)
	}
	r.Result = FaultResult{StatusCode: j.Result.StatusCode, SubStatusCode: j.Result.SubStatusCode,
		RetryAfter: time.Duration(j.Result.RetryAfterMS) * time.Millisecond, Delay: time.Duration(j.Result.DelayMS) * time.Millisecond}
	return r, nil
}

// serveFaults serves the control endpoint of Config.Faults (see the
// package documentation): requests signed with the master key, as any
// request of the REST API, for the resource type "faults" and the
// resource link "" (the set) or the rule's id.
func (h *Handler) serveFaults(w http.ResponseWriter, r *http.Request, deadline time.Time) {
	f := h.cfg.Faults
	rest := strings.TrimPrefix(r.URL.EscapedPath(), faultsPath)
	id := ""
	switch {
	case rest == "" || rest == "/":
	case rest[0] == '/' && !strings.Contains(rest[1:], "/"):
		var err error
		if id, err = url.PathUnescape(rest[1:]); err != nil {
			refuse(w, r, deadline, false, http.StatusBadRequest, "the fault rule's id is not a valid path segment")
			return
		}
	default:
		refuseNoControl(w, r, deadline)
		return
	}
	body, ok := h.controlRequest(w, r, deadline, "faults", id, "fault rules are set with the master key; a resource token cannot")
	if !ok {
		return
	}
	switch {
	case r.Method == http.MethodGet && id == "":
		rules := f.Rules()
		out := struct {
			Rules []faultRuleJSON `json:"rules"`
		}{Rules: make([]faultRuleJSON, len(rules))}
		for i, s := range rules {
			out.Rules[i] = faultRuleToJSON(s)
		}
		writeControlJSON(w, http.StatusOK, out)
	case r.Method == http.MethodGet:
		for _, s := range f.Rules() {
			if s.Rule.ID == id {
				writeControlJSON(w, http.StatusOK, faultRuleToJSON(s))
				return
			}
		}
		apiError{status: http.StatusNotFound, msg: fmt.Sprintf("no fault rule %q", id)}.write(w)
	case r.Method == http.MethodPost && id == "":
		var j faultRuleJSON
		if err := json.Unmarshal(body, &j); err != nil {
			apiError{status: http.StatusBadRequest, msg: "the fault rule is not valid JSON: " + err.Error()}.write(w)
			return
		}
		rule, err := j.rule()
		if err == nil {
			err = f.Add(rule)
		}
		if err != nil {
			apiError{status: http.StatusBadRequest, msg: strings.TrimPrefix(err.Error(), "cosmosrest: ")}.write(w)
			return
		}
		writeControlJSON(w, http.StatusCreated, faultRuleToJSON(FaultRuleStatus{Rule: rule}))
	case r.Method == http.MethodDelete && id == "":
		f.Clear()
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodDelete:
		if !f.Remove(id) {
			apiError{status: http.StatusNotFound, msg: fmt.Sprintf("no fault rule %q", id)}.write(w)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		apiError{status: http.StatusMethodNotAllowed, msg: fmt.Sprintf("%s is not served on %s", r.Method, clip(r.URL.Path))}.write(w)
	}
}

func writeControlJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
