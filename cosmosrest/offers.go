package cosmosrest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/lethedb/lethe"
)

// Offers are containers' provisioned throughput, as the SDKs read and
// change it (azcosmos ContainerClient.ReadThroughput and ReplaceThroughput,
// @azure/cosmos Offer): a container with a Throughput has one offer, whose
// id is derived from the container's name; a container without (unlimited,
// lethe's default) has none, as a container in a shared-throughput
// database has none in Cosmos DB. Offers are addressed by id, and their
// signature covers the id lowercased; the ids are lowercase hex.

// offerID returns the id of the offer of container coll in database db.
func offerID(db, coll string) string {
	return fmt.Sprintf("%012x", hash64("offer", db, coll)>>16)
}

// offerJSON writes the offer of a container.
func offerJSON(db *database, p lethe.ContainerProperties, ts int64) []byte {
	id := offerID(db.id, p.ID)
	crid := containerRID(db.id, p.ID)
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"resource":"dbs/%s/colls/%s/","offerType":"Invalid","offerResourceId":%q,"offerVersion":"V2",`, selfRID(db.rid), selfRID(crid), ridString(crid))
	fmt.Fprintf(&b, `"content":{"offerThroughput":%d,"offerIsRUPerMinuteThroughputEnabled":false},`, p.Throughput)
	fmt.Fprintf(&b, `"id":%q,"_rid":%q,"_self":"offers/%s/","_etag":%s,"_ts":%d}`, id, id, id,
		strconv.Quote(quoteETag(fmt.Sprintf("%016x", hash64("offeretag", id, strconv.FormatInt(int64(p.Throughput), 10))))), ts)
	return b.Bytes()
}

// offer is a container that has an offer.
type offer struct {
	db *database
	c  *lethe.Container
	p  lethe.ContainerProperties
}

// offers returns every container that has an offer, by database and id.
func (q *request) offers() []offer {
	var out []offer
	for _, db := range q.h.databases() {
		for _, id := range db.store.ContainerIDs() {
			c, err := db.store.Container(id)
			if err != nil {
				continue
			}
			p, err := c.Read(q.ctx())
			if err != nil || p.Throughput <= 0 {
				continue
			}
			out = append(out, offer{db, c, p})
		}
	}
	return out
}

func (q *request) listOffers() {
	var docs [][]byte
	for _, o := range q.offers() {
		docs = append(docs, offerJSON(o.db, o.p, q.collTS(o.db, o.p.ID)))
	}
	q.replyFeed("", "Offers", docs, "", 1)
}

func (q *request) queryOffers() {
	var docs []metaDoc
	for _, o := range q.offers() {
		docs = append(docs, metaDoc{offerID(o.db.id, o.p.ID), offerJSON(o.db, o.p, q.collTS(o.db, o.p.ID))})
	}
	q.metaQuery("", "Offers", docs)
}

// findOffer finds the request's offer, or answers 404.
func (q *request) findOffer() (offer, bool) {
	for _, o := range q.offers() {
		if offerID(o.db.id, o.p.ID) == q.t.id {
			return o, true
		}
	}
	writeError(q.w, http.StatusNotFound, fmt.Sprintf("there is no offer %q", clip(q.t.id)), 0, 0)
	return offer{}, false
}

func (q *request) readOffer() {
	o, ok := q.findOffer()
	if !ok {
		return
	}
	q.reply(http.StatusOK, offerJSON(o.db, o.p, q.collTS(o.db, o.p.ID)), 1)
}

// replaceOffer changes a container's throughput: content.offerThroughput,
// or the maximum of content.offerAutopilotSettings, provisioned in full.
func (q *request) replaceOffer() {
	o, ok := q.findOffer()
	if !ok {
		return
	}
	var in struct {
		Content *struct {
			OfferThroughput *int64 `json:"offerThroughput"`
			Autopilot       *struct {
				MaxThroughput int64 `json:"maxThroughput"`
			} `json:"offerAutopilotSettings"`
		} `json:"content"`
	}
	var n int64
	if err := json.Unmarshal(q.body, &in); err == nil && in.Content != nil {
		switch {
		case in.Content.OfferThroughput != nil:
			n = *in.Content.OfferThroughput
		case in.Content.Autopilot != nil:
			n = in.Content.Autopilot.MaxThroughput
		}
	}
	if n <= 0 || n > math.MaxInt32 {
		writeError(q.w, http.StatusBadRequest, "the offer's content must have a positive offerThroughput (or offerAutopilotSettings.maxThroughput)", 0, 0)
		return
	}
	p := o.p
	p.Throughput = int32(n)
	if err := o.c.Replace(q.ctx(), p); err != nil {
		q.fail(err, 0, 0)
		return
	}
	got, err := o.c.Read(q.ctx())
	if err != nil {
		q.fail(err, 0, 0)
		return
	}
	q.reply(http.StatusOK, offerJSON(o.db, got, q.collTS(o.db, got.ID)), 10)
}
