// Package sessionstore keeps web sessions in Azure Cosmos DB, each expiring
// after a spell of idleness by the container's time to live. It is written
// against the official SDK (azcosmos) alone, and is the example to copy of
// code tested with lethetest (sessionstore_test.go) and run against
// cmd/lethe or Azure Cosmos DB by changing the endpoint (cmd/sessiondemo).
package sessionstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// ErrNotFound is returned for a session that does not exist, or has
// expired.
var ErrNotFound = errors.New("sessionstore: no such session")

// Session is one user's session.
type Session struct {
	ID      string            `json:"id"`
	User    string            `json:"user"`
	Data    map[string]string `json:"data,omitempty"`
	Touches int               `json:"touches"`
	TTL     int32             `json:"ttl"` // seconds of idleness before it expires
}

// Store keeps sessions in a container whose partition key is /id and whose
// time to live is on (EnsureContainer makes one).
type Store struct {
	c    *azcosmos.ContainerClient
	idle time.Duration
}

// New returns a Store of sessions that expire after idle without a Touch.
func New(c *azcosmos.ContainerClient, idle time.Duration) *Store {
	return &Store{c: c, idle: idle}
}

// EnsureContainer creates database db and its container coll for sessions
// unless they exist, and returns the container.
func EnsureContainer(ctx context.Context, client *azcosmos.Client, db, coll string) (*azcosmos.ContainerClient, error) {
	if _, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: db}, nil); err != nil && status(err) != http.StatusConflict {
		return nil, err
	}
	d, err := client.NewDatabase(db)
	if err != nil {
		return nil, err
	}
	on := int32(-1) // time to live on; each session has its own
	props := azcosmos.ContainerProperties{ID: coll, DefaultTimeToLive: &on,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/id"}}}
	if _, err := d.CreateContainer(ctx, props, nil); err != nil && status(err) != http.StatusConflict {
		return nil, err
	}
	return d.NewContainer(coll)
}

// Create starts a session for user.
func (s *Store) Create(ctx context.Context, user string, data map[string]string) (Session, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Session{}, err
	}
	sess := Session{ID: hex.EncodeToString(b[:]), User: user, Data: data, TTL: int32(s.idle / time.Second)}
	doc, err := json.Marshal(sess)
	if err != nil {
		return Session{}, err
	}
	if _, err := s.c.CreateItem(ctx, azcosmos.NewPartitionKeyString(sess.ID), doc, nil); err != nil {
		return Session{}, fmt.Errorf("sessionstore: create: %w", err)
	}
	return sess, nil
}

// Get returns session id. A session that expired is ErrNotFound; any other
// failure (the service unavailable, say) is returned as it is, never as a
// missing session: a caller must not log a user out for an outage.
func (s *Store) Get(ctx context.Context, id string) (Session, error) {
	r, err := s.c.ReadItem(ctx, azcosmos.NewPartitionKeyString(id), id, nil)
	if status(err) == http.StatusNotFound {
		return Session{}, ErrNotFound
	}
	if err != nil {
		return Session{}, fmt.Errorf("sessionstore: get: %w", err)
	}
	var sess Session
	if err := json.Unmarshal(r.Value, &sess); err != nil {
		return Session{}, fmt.Errorf("sessionstore: get: %w", err)
	}
	return sess, nil
}

// Touch marks session id as used: its idle time starts again (a write
// restarts an item's time to live).
func (s *Store) Touch(ctx context.Context, id string) error {
	ops := azcosmos.PatchOperations{}
	ops.AppendIncrement("/touches", 1)
	_, err := s.c.PatchItem(ctx, azcosmos.NewPartitionKeyString(id), id, ops, nil)
	if status(err) == http.StatusNotFound {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("sessionstore: touch: %w", err)
	}
	return nil
}

// Delete ends session id.
func (s *Store) Delete(ctx context.Context, id string) error {
	_, err := s.c.DeleteItem(ctx, azcosmos.NewPartitionKeyString(id), id, nil)
	if err != nil && status(err) != http.StatusNotFound {
		return fmt.Errorf("sessionstore: delete: %w", err)
	}
	return nil
}

// status returns the HTTP status of an SDK error, or 0.
func status(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}
