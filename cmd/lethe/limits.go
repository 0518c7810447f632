package main

import (
	"errors"
	"flag"
	"net"
	"net/http"
	"sync"
	"time"
)

// The limits on what clients may hold of the server, the defaults of the
// flags that change them.
const (
	// defaultMaxConns bounds the connections open at once, over both
	// gateways. A connection past it waits in the listener's backlog until
	// another closes.
	defaultMaxConns = 2048
	// defaultMaxHeaderBytes bounds a request's header block (431 above it),
	// where Go's default is 1 MiB: a client stalling in the middle of a
	// header held that much. Cosmos DB answers headers over its limit with
	// 400 "Request header too large"; its SDKs keep session and
	// continuation tokens far below this.
	defaultMaxHeaderBytes = 32 << 10
	// defaultReadTimeout bounds the reading of one request, body included:
	// a 2 MB body must arrive at 35 KB/s at least.
	defaultReadTimeout = time.Minute
	// http2MaxReadFrameSize is the largest HTTP/2 frame the server
	// accepts, the protocol's initial value, where Go's default is 1 MiB:
	// a client that announced a large frame and stalled held a buffer of
	// its size.
	http2MaxReadFrameSize = 16 << 10
)

// limits holds the values of the flags that bound connections.
type limits struct {
	maxConns       int
	maxHeaderBytes int
	readTimeout    time.Duration
}

// limitFlags defines the flags of limits on fs.
func limitFlags(fs *flag.FlagSet) *limits {
	l := new(limits)
	fs.IntVar(&l.maxConns, "max-conns", defaultMaxConns, "the most connections open at once over both gateways; more wait until one closes")
	fs.IntVar(&l.maxHeaderBytes, "max-header-bytes", defaultMaxHeaderBytes, "the largest request header block, in bytes (431 above it)")
	fs.DurationVar(&l.readTimeout, "read-timeout", defaultReadTimeout, "the longest time to read one request, its body included")
	return l
}

// check refuses values that would leave no limit.
func (l *limits) check() error {
	switch {
	case l.maxConns < 1:
		return errors.New("-max-conns must be at least 1")
	case l.maxHeaderBytes < 4<<10:
		return errors.New("-max-header-bytes must be at least 4096")
	case l.readTimeout <= 0:
		return errors.New("-read-timeout must be positive")
	}
	return nil
}

// apply sets srv's limits: header size, read time and HTTP/2 frames.
func (l *limits) apply(srv *http.Server) {
	srv.MaxHeaderBytes = l.maxHeaderBytes
	srv.ReadTimeout = l.readTimeout
	srv.ReadHeaderTimeout = min(10*time.Second, l.readTimeout)
	srv.HTTP2 = &http.HTTP2Config{MaxReadFrameSize: http2MaxReadFrameSize}
}

// connSlots is a count of connections shared by listeners: a listener
// accepts only while a slot is free and frees it when the connection closes.
type connSlots chan struct{}

// newConnSlots returns n slots.
func newConnSlots(n int) connSlots { return make(connSlots, n) }

// listener returns ln accepting only while s has a free slot.
func (s connSlots) listener(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, slots: s, done: make(chan struct{})}
}

// limitListener is a net.Listener whose connections take a slot each.
type limitListener struct {
	net.Listener
	slots     connSlots
	done      chan struct{} // closed by Close: Accept no longer waits
	closeOnce sync.Once
}

// Accept waits for a free slot, then for a connection.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &slotConn{Conn: c, slots: l.slots}, nil
}

// Close closes the listener and ends a wait for a slot.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// slotConn is a connection holding a slot, which its first Close frees.
type slotConn struct {
	net.Conn
	slots connSlots
	once  sync.Once
}

// Close closes the connection and frees its slot.
func (c *slotConn) Close() error {
	c.once.Do(func() { <-c.slots })
	return c.Conn.Close()
}
