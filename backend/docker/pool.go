package docker

import (
	"context"
	"sync"
)

// pool keeps a container's idle exec channels for reuse, at most max open.
type pool struct {
	api   execer
	ctr   string
	slots chan struct{}

	mu     sync.Mutex
	idle   []*session
	open   map[*session]bool
	closed bool
}

func newPool(api execer, ctr string, max int) *pool {
	return &pool{api: api, ctr: ctr, slots: make(chan struct{}, max), open: map[*session]bool{}}
}

// pool returns ctr's pool.
func (b *Backend) pool(ctr string) *pool {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pools[ctr]
	if p == nil {
		p = newPool(b.api, ctr, b.cfg.MaxSessions)
		b.pools[ctr] = p
	}
	return p
}

// dropPool closes ctr's channels (the container is being removed).
func (b *Backend) dropPool(ctr string) {
	b.mu.Lock()
	p := b.pools[ctr]
	delete(b.pools, ctr)
	b.mu.Unlock()
	if p != nil {
		p.close()
	}
}

// get takes an idle channel or opens one, waiting for a slot.
func (p *pool) get(ctx context.Context) (*session, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p.mu.Lock()
	for len(p.idle) > 0 {
		s := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if !s.isDead() {
			p.mu.Unlock()
			return s, nil
		}
		delete(p.open, s)
		s.close()
	}
	p.mu.Unlock()
	s, err := openSession(ctx, p.api, p.ctr)
	if err != nil {
		<-p.slots
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		s.close()
		<-p.slots
		return nil, context.Canceled
	}
	p.open[s] = true
	p.mu.Unlock()
	return s, nil
}

// put returns a channel after a run; a channel that is not reusable is closed.
func (p *pool) put(s *session, reusable bool) {
	s.cur.Store(nil)
	p.mu.Lock()
	if reusable && !p.closed && !s.isDead() {
		p.idle = append(p.idle, s)
	} else {
		delete(p.open, s)
		s.close()
	}
	p.mu.Unlock()
	<-p.slots
}

func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	all := make([]*session, 0, len(p.open))
	for s := range p.open {
		all = append(all, s)
	}
	p.idle = nil
	p.mu.Unlock()
	for _, s := range all {
		s.close()
	}
}
