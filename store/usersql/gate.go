package usersql

import (
	"context"
	"sync"
	"time"
)

// A gate admits a process's user SQL to its slots before it asks the database for them: a
// query past its own slots is refused at once, and one waiting for its organization's share
// or the database's waits here, in turn, holding no connection and asking the database
// nothing. (Waiting in the database held a pool connection per waiting query and polled the
// advisory locks every few milliseconds: work that slowed every other tenant's requests.)
// The advisory locks still count across replicas; with one replica they are free whenever
// the gate admits.
type gate struct {
	all  chan struct{} // a token per slot of the database's share
	mu   sync.Mutex
	sets map[string]*tokens // of a Slot's key or an organization's share, while a query holds or waits for one
}

type tokens struct {
	key   string        // in sets
	c     chan struct{} // a token per slot
	users int           // queries holding or waiting for a token
}

// gates holds a gate per SharedSlot's bounds (its value: callers make their own).
var gates sync.Map

func gateOf(sh *SharedSlot) *gate {
	key := SharedSlot{Max: sh.Max, PerOrg: sh.PerOrg}
	g, ok := gates.Load(key)
	if !ok {
		g, _ = gates.LoadOrStore(key, &gate{all: make(chan struct{}, max(sh.Max, 1)), sets: map[string]*tokens{}})
	}
	return g.(*gate)
}

// enter takes a token of slot's key at once (ErrNoSlot when they are all held: the
// caller's own queries), then waits, until deadline, for one of org's share (when PerOrg is
// set) and then one of the database's, and returns what gives them back.
func (g *gate) enter(ctx context.Context, slot *Slot, org string, deadline time.Time) (func(), error) {
	sh := slot.Shared
	own := g.join("slot:"+slot.Key, slot.Max)
	select {
	case own.c <- struct{}{}:
	default:
		g.leave(own, false)
		return nil, ErrNoSlot
	}
	held := []*tokens{own}
	giveBack := func() {
		for _, t := range held {
			g.leave(t, true)
		}
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	if sh.PerOrg > 0 {
		share := g.join("org:"+org, sh.PerOrg)
		select {
		case share.c <- struct{}{}:
			held = append(held, share)
		case <-timer.C:
			g.leave(share, false)
			giveBack()
			return nil, &OrgBusyError{Max: sh.PerOrg}
		case <-ctx.Done():
			g.leave(share, false)
			giveBack()
			return nil, ctx.Err()
		}
	}
	select {
	case g.all <- struct{}{}:
	case <-timer.C:
		giveBack()
		return nil, ErrBusy
	case <-ctx.Done():
		giveBack()
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-g.all
			giveBack()
		})
	}, nil
}

// join counts a query in the tokens of key (n of them), made when none holds or waits.
func (g *gate) join(key string, n int) *tokens {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.sets[key]
	if t == nil {
		t = &tokens{key: key, c: make(chan struct{}, max(n, 1))}
		g.sets[key] = t
	}
	t.users++
	return t
}

// leave gives back t's token when held, and forgets t when no query holds or waits for one.
func (g *gate) leave(t *tokens, held bool) {
	if held {
		<-t.c
	}
	g.mu.Lock()
	if t.users--; t.users == 0 {
		delete(g.sets, t.key)
	}
	g.mu.Unlock()
}
