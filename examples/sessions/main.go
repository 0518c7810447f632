// Command sessions shows lethe as a web-session store, in a few seconds of
// real time: sessions expire when idle, one is kept alive by being touched,
// one is pinned with "ttl": -1, and the container's default TTL is changed
// while it runs.
//
//	go run ./examples/sessions
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/lethedb/lethe"
)

func main() {
	ctx := context.Background()
	store, err := lethe.Open(nil) // in memory, system clock, background reaper
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	// Sessions expire 2 seconds after their last write. Each user's sessions
	// form one logical partition, as in Cosmos DB: the partition key value
	// comes first in every item call.
	sessions, err := store.CreateContainer(ctx, lethe.ContainerProperties{
		ID:                     "sessions",
		DefaultTimeToLive:      2,
		PartitionKeyDefinition: lethe.PartitionKeyDefinition{Paths: []string{"/user"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	say := func(format string, args ...any) {
		fmt.Printf("[%4.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}

	for _, s := range []struct{ user, doc string }{
		{"alice", `{"id":"alice","user":"alice","cart":["book"]}`}, // idle: expires after 2 s
		{"bob", `{"id":"bob","user":"bob"}`},                       // touched every second: stays
		{"root", `{"id":"admin","user":"root","ttl":-1}`},          // pinned: never expires
		{"guest", `{"id":"guest","user":"guest","ttl":1}`},         // its own, shorter TTL
	} {
		if _, err := sessions.CreateItem(ctx, lethe.NewPartitionKeyString(s.user), []byte(s.doc), nil); err != nil {
			log.Fatal(err)
		}
	}
	say("created sessions alice, bob, admin (ttl -1) and guest (ttl 1); default TTL 2 s")

	show := func() {
		var line string
		for _, s := range []struct{ user, id string }{{"alice", "alice"}, {"bob", "bob"}, {"root", "admin"}, {"guest", "guest"}} {
			id := s.id
			_, err := sessions.ReadItem(ctx, lethe.NewPartitionKeyString(s.user), id, nil)
			switch {
			case err == nil:
				line += " " + id + ":live"
			case errors.Is(err, lethe.ErrNotFound):
				line += " " + id + ":gone"
			default:
				log.Fatal(err)
			}
		}
		st := sessions.Stats()
		say("%s   (live %d, awaiting purge %d, purged %d)", line, st.Items, st.ExpiredPending, st.Purged)
	}

	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for i := 1; i <= 12; i++ {
		<-tick.C
		if i%2 == 0 && i <= 8 {
			// Touching bob's session is a write: it resets _ts and the countdown.
			if _, err := sessions.UpsertItem(ctx, lethe.NewPartitionKeyString("bob"), []byte(`{"id":"bob","user":"bob"}`), nil); err != nil {
				log.Fatal(err)
			}
			say("touched bob")
		}
		if i == 8 {
			// A new session, then the default goes from 2 s to 5 s: it applies
			// at once to every session, counted from its own last write.
			if _, err := sessions.CreateItem(ctx, lethe.NewPartitionKeyString("alice"), []byte(`{"id":"alice","user":"alice"}`), nil); err != nil {
				log.Fatal(err)
			}
			say("alice logs in again (a create over an expired id succeeds)")
			props, err := sessions.Read(ctx)
			if err != nil {
				log.Fatal(err)
			}
			props.DefaultTimeToLive = 5
			if err := sessions.Replace(ctx, props); err != nil {
				log.Fatal(err)
			}
			say("default TTL changed from 2 s to 5 s; bob is no longer touched")
		}
		show()
	}
	st := sessions.Stats()
	say("done: %d live sessions, %d purged by the reaper, %.1f RU spent on purging", st.Items, st.Purged, st.ReaperCharge)
}
