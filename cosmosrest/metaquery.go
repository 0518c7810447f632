package cosmosrest

import (
	"net/http"
	"strconv"

	"github.com/lethedb/lethe/internal/query"
	"github.com/lethedb/lethe/internal/queryspec"
)

// metaDoc is a database's or container's properties, as a query over the
// databases or containers sees them.
type metaDoc struct {
	id   string
	json []byte
}

// parseQueryBody reads a query request's body, a query specification
// (queryspec): {"query": …, "parameters": [{"name": "@x", "value": …}]}.
func (q *request) parseQueryBody() (queryspec.Spec, bool) {
	spec, err := queryspec.Decode(q.body)
	if err != nil {
		q.answerError(http.StatusBadRequest, withDetail(msgPayloadInvalid, "the body of a query must be a JSON object "+queryspec.Shape))
		return spec, false
	}
	return spec, true
}

// metaQuery answers a query over databases or containers: lethe's query
// engine over their properties, one page of the x-ms-max-item-count first
// results after the continuation (an offset).
func (q *request) metaQuery(rid, name string, docs []metaDoc) {
	spec, ok := q.parseQueryBody()
	if !ok {
		return
	}
	parsed, err := query.Parse(spec.Query)
	if err != nil {
		q.badQuery(err, "")
		return
	}
	qdocs := make([]query.Doc, len(docs))
	for i, d := range docs {
		qdocs[i] = query.Doc{ID: d.id, JSON: d.json}
	}
	res, err := query.Exec(q.ctx(), parsed, spec.Values(), qdocs, q.h.now())
	if err != nil {
		if !q.badQuery(err, "") {
			q.fail(err, 0, 0)
		}
		return
	}
	items := res.Items
	from := 0
	if tok := q.r.Header.Get("x-ms-continuation"); tok != "" {
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 {
			q.answerError(http.StatusBadRequest, withDetail(msgBadToken, "the continuation token is not one this query returned"))
			return
		}
		from = min(n, len(items))
	}
	items = items[from:]
	limit, ok := q.maxItemCount()
	if !ok {
		return
	}
	next := ""
	if limit > 0 && len(items) > limit {
		items = items[:limit]
		next = strconv.Itoa(from + limit)
	}
	q.replyFeed(rid, name, items, next, 1)
}

// maxItemCount reads x-ms-max-item-count: 0 when absent (the default page
// size), -1 for as many as fit a page, else the count. It answers 400 and
// returns false when the header is invalid.
func (q *request) maxItemCount() (int, bool) {
	v := q.r.Header.Get("x-ms-max-item-count")
	if v == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < -1 {
		q.answerError(http.StatusBadRequest, "x-ms-max-item-count must be -1 or a positive count")
		return 0, false
	}
	return int(n), true
}
