package cosmosrest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/lethedb/lethe"
)

// Offers are provisioned throughput, as the SDKs read and change it
// (azcosmos ReadThroughput and ReplaceThroughput of a database or a
// container, @azure/cosmos Offer). A database with shared throughput (its
// store's) has one offer, and so has a container with throughput of its
// own; a container without draws on its database's, or is unlimited
// (lethe's default) when the database has none, and has no offer, as a
// container in a shared-throughput database has none in Cosmos DB.
//
// An offer is manual (content.offerThroughput) or autoscale
// (content.offerAutopilotSettings.maxThroughput, with offerThroughput the
// throughput it has scaled to: see lethe's ScaledThroughput). Both are
// checked as Cosmos DB checks them: manual from 400 to 1,000,000 RU/s in
// steps of 100, an autoscale maximum from 1000 to 1,000,000 in steps of
// 1000; a replace keeps the offer's kind (the service migrates between the
// two only with its migration headers, which lethe does not serve).
//
// Offers are addressed by id, and their signature covers the id
// lowercased; the ids are lowercase hex, derived from the database's and
// container's names.

// offerID returns the id of the offer of container coll in database db,
// or of the database itself when coll is "".
func offerID(db, coll string) string {
	return fmt.Sprintf("%012x", hash64("offer", db, coll)>>16)
}

// offer is a database's or a container's throughput.
type offer struct {
	db *database
	c  *lethe.Container // nil: the database's offer
	// throughput or autoscaleMax is set: the offer's setting.
	throughput, autoscaleMax int32
	scaled                   int32 // what it provides now
	ts                       int64
}

func (o offer) id() string {
	if o.c == nil {
		return offerID(o.db.id, "")
	}
	return offerID(o.db.id, o.c.ID())
}

// json writes the offer as Cosmos DB does (offerVersion V2).
func (o offer) json() []byte {
	id := o.id()
	rid, resource := o.db.rid, fmt.Sprintf("dbs/%s/", ridString(o.db.rid))
	if o.c != nil {
		rid = containerRID(o.db.id, o.c.ID())
		resource += fmt.Sprintf("colls/%s/", ridString(rid))
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"resource":%q,"offerType":"Invalid","offerResourceId":%q,"offerVersion":"V2",`, resource, ridString(rid))
	current := o.throughput
	if o.autoscaleMax > 0 {
		current = o.scaled
	}
	fmt.Fprintf(&b, `"content":{"offerThroughput":%d,"offerIsRUPerMinuteThroughputEnabled":false`, current)
	if o.autoscaleMax > 0 {
		fmt.Fprintf(&b, `,"offerAutopilotSettings":{"tier":0,"maximumTierThroughput":0,"autoUpgrade":false,"maxThroughput":%d}`, o.autoscaleMax)
	}
	etag := fmt.Sprintf("%016x", hash64("offeretag", id, strconv.Itoa(int(o.throughput)), strconv.Itoa(int(o.autoscaleMax))))
	fmt.Fprintf(&b, `},"id":%q,"_rid":%q,"_self":"offers/%s/","_etag":%s,"_ts":%d}`, id, id, id, strconv.Quote(quoteETag(etag)), o.ts)
	return b.Bytes()
}

// offers returns every offer: each database's, if it has shared
// throughput, then its containers' that have their own.
func (q *request) offers() []offer {
	var out []offer
	for _, db := range q.h.databases() {
		if m, a := db.store.Throughput(); m > 0 || a > 0 {
			db.mu.Lock()
			ts := db.offerTS
			db.mu.Unlock()
			out = append(out, offer{db: db, throughput: m, autoscaleMax: a, scaled: db.store.ScaledThroughput(), ts: ts})
		}
		for _, id := range db.store.ContainerIDs() {
			c, err := db.store.Container(id)
			if err != nil {
				continue
			}
			p, err := c.Read(q.ctx())
			if err != nil || (p.Throughput <= 0 && p.AutoscaleMaxThroughput <= 0) {
				continue
			}
			out = append(out, offer{db: db, c: c, throughput: p.Throughput, autoscaleMax: p.AutoscaleMaxThroughput,
				scaled: c.ScaledThroughput(), ts: q.collTS(db, p.ID)})
		}
	}
	return out
}

func (q *request) listOffers() {
	var docs [][]byte
	for _, o := range q.offers() {
		docs = append(docs, o.json())
	}
	q.replyFeed("", "Offers", docs, "", 1)
}

func (q *request) queryOffers() {
	var docs []metaDoc
	for _, o := range q.offers() {
		docs = append(docs, metaDoc{o.id(), o.json()})
	}
	q.metaQuery("", "Offers", docs)
}

// findOffer finds the request's offer, or answers 404.
func (q *request) findOffer() (offer, bool) {
	for _, o := range q.offers() {
		if o.id() == q.t.id {
			return o, true
		}
	}
	q.answerError(http.StatusNotFound, msgResourceNotFound)
	return offer{}, false
}

func (q *request) readOffer() {
	if o, ok := q.findOffer(); ok {
		q.reply(http.StatusOK, o.json(), 1)
	}
}

// The service's messages for throughput it refuses.
const (
	msgManualRange    = "The offer should have valid throughput values between 400 and 1000000 inclusive in increments of 100."
	msgAutoscaleRange = "The offer should have valid throughput values between 1000 and 1000000 inclusive in increments of 1000."
	msgToAutoscale    = "x-ms-cosmos-migrate-offer-to-autopilot must be supplied and offercontent must not contain autopilotSettings for migration from manual throughput to autoscale."
	msgToManual       = "x-ms-cosmos-migrate-offer-to-manual-throughput must be supplied and offercontent must contain autopilotSettings for migration of autoscale collection to manual throughput."
)

// serviceMessage is an error whose text is the service's message, sent
// as it is.
type serviceMessage string

func (m serviceMessage) Error() string { return string(m) }

// checkThroughput checks a throughput setting as Cosmos DB does: manual
// from 400 to 1,000,000 RU/s in steps of 100, an autoscale maximum from
// 1000 to 1,000,000 in steps of 1000. (The library allows any positive
// value.)
func checkThroughput(manual, autoscaleMax int64) error {
	switch {
	case manual != 0 && (manual < 400 || manual > 1_000_000 || manual%100 != 0):
		return serviceMessage(msgManualRange)
	case autoscaleMax != 0 && (autoscaleMax < 1000 || autoscaleMax > 1_000_000 || autoscaleMax%1000 != 0):
		return serviceMessage(msgAutoscaleRange)
	}
	return nil
}

// throughput reads the provisioned throughput of a database or container
// from the headers of its create request: x-ms-offer-throughput (manual)
// or x-ms-cosmos-offer-autopilot-settings (autoscale), never both; neither
// is no throughput of its own.
func (q *request) throughput() (manual, autoscaleMax int32, err error) {
	mv, av := q.r.Header.Get("x-ms-offer-throughput"), q.r.Header.Get("x-ms-cosmos-offer-autopilot-settings")
	var m, a int64
	switch {
	case mv != "" && av != "":
		return 0, 0, errors.New("x-ms-offer-throughput and x-ms-cosmos-offer-autopilot-settings cannot both be given: throughput is manual or autoscale")
	case mv != "":
		if m, err = strconv.ParseInt(strings.TrimSpace(mv), 10, 32); err != nil || m <= 0 {
			return 0, 0, fmt.Errorf("x-ms-offer-throughput must be a positive number of request units per second, not %q", clip(mv))
		}
	case av != "":
		var s struct {
			MaxThroughput *int32 `json:"maxThroughput"`
		}
		if err := json.Unmarshal([]byte(av), &s); err != nil || s.MaxThroughput == nil {
			return 0, 0, fmt.Errorf("x-ms-cosmos-offer-autopilot-settings must be a JSON object with a maxThroughput, not %q", clip(av))
		}
		a = int64(*s.MaxThroughput)
		if a == 0 {
			a = -1 // present, and out of range
		}
	}
	if err := checkThroughput(m, a); err != nil {
		return 0, 0, err
	}
	return int32(m), int32(a), nil
}

// replaceOffer changes a database's or a container's throughput:
// content.offerThroughput of a manual offer, or
// content.offerAutopilotSettings.maxThroughput of an autoscale one (whose
// offerThroughput, the figure it scaled to, is not a setting: a client
// that sends back what it read is not refused for it). A value the
// service refuses is a 400 that changes nothing, and so is a body whose
// _rid is another offer's (the service replaces an offer at its own) or
// that names the offer by neither its id nor its _rid. A container's
// throughput raised past what its ranges serve splits them first, as the
// service does (raiseRanges).
func (q *request) replaceOffer() {
	o, ok := q.findOffer()
	if !ok {
		return
	}
	var in struct {
		ID      *string `json:"id"`
		RID     *string `json:"_rid"`
		Content *struct {
			OfferThroughput *int64 `json:"offerThroughput"`
			Autopilot       *struct {
				MaxThroughput *int64 `json:"maxThroughput"`
			} `json:"offerAutopilotSettings"`
		} `json:"content"`
	}
	if err := json.Unmarshal(q.body, &in); err != nil || in.Content == nil {
		q.answerError(http.StatusBadRequest, withDetail(msgPayloadInvalid, "the body must be an offer with its content"))
		return
	}
	if in.ID == nil && in.RID == nil {
		q.answerError(http.StatusBadRequest, withDetail(msgPayloadInvalid, "the offer has neither its id nor its _rid (both missing or null)"))
		return
	}
	if in.RID != nil && *in.RID != o.id() {
		q.answerError(http.StatusBadRequest, fmt.Sprintf("the offer's _rid %q is not the _rid of the offer %q: an offer is replaced with its own", clip(*in.RID), o.id()))
		return
	}
	if q.r.Header.Get("x-ms-cosmos-migrate-offer-to-autopilot") != "" || q.r.Header.Get("x-ms-cosmos-migrate-offer-to-manual-throughput") != "" {
		q.unsupported("migrating an offer between manual and autoscale throughput is not supported by lethe")
		return
	}
	var m, a int64
	ap := in.Content.Autopilot
	switch {
	case o.autoscaleMax == 0 && ap != nil:
		q.answerError(http.StatusBadRequest, msgToAutoscale)
		return
	case o.autoscaleMax > 0 && ap == nil:
		q.answerError(http.StatusBadRequest, msgToManual)
		return
	case ap != nil:
		if a = -1; ap.MaxThroughput != nil && *ap.MaxThroughput != 0 {
			a = *ap.MaxThroughput
		}
	case in.Content.OfferThroughput == nil || *in.Content.OfferThroughput == 0:
		m = -1
	default:
		m = *in.Content.OfferThroughput
	}
	if err := checkThroughput(m, a); err != nil {
		q.answerError(http.StatusBadRequest, err.Error())
		return
	}
	if o.c == nil {
		if err := q.replaceDatabaseThroughput(o.db, int32(m), int32(a)); err != nil {
			q.fail(err, 0, 0)
			return
		}
	} else {
		p, err := o.c.Read(q.ctx())
		to := p
		to.Throughput, to.AutoscaleMaxThroughput = int32(m), int32(a)
		if err == nil {
			// Split first: a failure leaves the throughput as it was.
			err = q.h.raiseRanges(o.db, p, to)
		}
		if err == nil {
			// At the answering region's instant, as a container's
			// replace (replaceContainer): the same change everywhere.
			err = o.c.ReplaceAt(q.ctx(), to, q.instant())
		}
		if err != nil {
			q.fail(err, 0, 0)
			return
		}
	}
	o, ok = q.findOffer()
	if ok {
		q.reply(http.StatusOK, o.json(), 10)
	}
}
