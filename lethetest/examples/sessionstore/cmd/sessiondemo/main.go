// Command sessiondemo runs sessionstore against lethe (cmd/lethe on
// https://localhost:8081/, as the emulator) or, when COSMOS_ENDPOINT is
// set, against that account, with COSMOS_KEY (on localhost, the emulator's
// key by default, and the certificate is not checked):
//
//	go -C ../../../cmd/lethe run . &                    # lethe, as the emulator
//	go run ./cmd/sessiondemo
//
//	COSMOS_ENDPOINT=https://myaccount.documents.azure.com:443/ \
//	COSMOS_KEY=... go run ./cmd/sessiondemo              # Azure Cosmos DB
package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/lethedb/lethe/lethetest/examples/sessionstore"
)

// emulatorKey is the Cosmos DB emulator's well-known key, which cmd/lethe
// takes by default.
const emulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

func main() {
	log.SetFlags(0)
	if err := run(context.Background()); err != nil {
		log.Fatalf("sessiondemo: %v", err)
	}
}

func run(ctx context.Context) error {
	endpoint, key := os.Getenv("COSMOS_ENDPOINT"), os.Getenv("COSMOS_KEY")
	if endpoint == "" {
		endpoint = "https://localhost:8081/"
	}
	var opts azcosmos.ClientOptions
	if u, err := url.Parse(endpoint); err == nil && (u.Hostname() == "localhost" || u.Hostname() == "127.0.0.1") {
		// Local lethe (or the emulator): a self-signed certificate, and
		// the emulator's key unless told otherwise.
		opts.Transport = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		if key == "" {
			key = emulatorKey
		}
	}
	cred, err := azcosmos.NewKeyCredential(key)
	if err != nil {
		return err
	}
	client, err := azcosmos.NewClientWithKey(endpoint, cred, &opts)
	if err != nil {
		return err
	}
	defer client.Close()

	c, err := sessionstore.EnsureContainer(ctx, client, "sessiondemo", "sessions")
	if err != nil {
		return err
	}
	store := sessionstore.New(c, 5*time.Second)
	sess, err := store.Create(ctx, "ann", map[string]string{"cart": "3 items"})
	if err != nil {
		return err
	}
	fmt.Printf("created session %s of %s on %s\n", sess.ID, sess.User, endpoint)
	if err := store.Touch(ctx, sess.ID); err != nil {
		return err
	}
	got, err := store.Get(ctx, sess.ID)
	if err != nil {
		return err
	}
	fmt.Printf("read it back: %d touch, cart %q; it expires 5 s after its last use\n", got.Touches, got.Data["cart"])
	return nil
}
