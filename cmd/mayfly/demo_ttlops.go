package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mayflydb/mayfly"
)

// slide is the demo's step 8: a session that slides while its user is
// active, a password-reset token that works once, and a retried request
// that an idempotency key makes harmless. It starts at T+31m, after every
// key of the earlier steps but the remember-me sessions is gone.
func (d *demo) slide(context.Context) error {
	d.heading("8. Slide a session, spend a token once")
	const key, token, request = "session:active", "token:reset", "request:7f3a"
	now := 31 * time.Minute
	if err := d.db.PutTTL([]byte(key), []byte(sessionValue(1)), mayfly.DefaultTTL()); err != nil {
		return err
	}
	d.say("PutTTL(%s, DefaultTTL): expires at T+%v", key, now+demoDefaultTTL)
	m0 := d.db.Metrics()
	// The user stays active for 40 minutes: every 10 s a page, which makes
	// five requests 100 ms apart; each reads the session and slides its
	// deadline with GetEx.
	calls := 0
	for t := 10 * time.Second; t <= 40*time.Minute; t += 10 * time.Second {
		for r := range 5 {
			d.clk.Set(demoStart.Add(now + t + time.Duration(r)*100*time.Millisecond))
			if _, err := d.db.GetEx([]byte(key), mayfly.ExpireAfter(demoDefaultTTL)); err != nil {
				return fmt.Errorf("GetEx at T+%v: %w", now+t, err)
			}
			calls++
		}
	}
	now += 40 * time.Minute
	d.advanceTo(now + time.Second)
	at, _, err := d.db.ExpireTime([]byte(key))
	if err != nil {
		return err
	}
	want := demoStart.Add(now + demoDefaultTTL)
	if err := d.check(at.Equal(want), "after %d GetEx calls over 40 minutes the session expires at %s, 30 minutes after the last page (it was due at T+1h1m)", calls, at.UTC().Format("15:04:05")); err != nil {
		return err
	}
	m1 := d.db.Metrics()
	spared := m1.TouchesCoalesced - m0.TouchesCoalesced
	written := uint64(calls) - spared
	if err := d.check(written == 240, "%d of them wrote nothing: the deadline was within the 1 s touch window (Options.TouchWindow) of the one asked", spared); err != nil {
		return err
	}
	d.say("the other %d wrote a deadline row of %d bytes each to the WAL; the %d-byte session was never written again",
		written, (m1.WALBytes-m0.WALBytes)/written, len(sessionValue(1)))

	// A password-reset token: one use only, even if two requests race.
	if err := d.db.PutTTL([]byte(token), []byte("482913"), mayfly.ExpireAfter(15*time.Minute)); err != nil {
		return err
	}
	v, err := d.db.GetDel([]byte(token))
	if err := d.check(err == nil && string(v) == "482913", "GetDel(%s) returns %s and deletes it in the same step", token, v); err != nil {
		return err
	}
	_, err = d.db.GetDel([]byte(token))
	if err := d.check(errors.Is(err, mayfly.ErrNotFound), "a second GetDel(%s) finds nothing: %v", token, err); err != nil {
		return err
	}

	// A retried request: the idempotency key is stored once.
	first, err := d.db.PutIfAbsent([]byte(request), []byte("charged 20 EUR"), mayfly.ExpireAfter(24*time.Hour))
	if err != nil {
		return err
	}
	retry, err := d.db.PutIfAbsent([]byte(request), []byte("charged 20 EUR"), mayfly.ExpireAfter(24*time.Hour))
	if err != nil {
		return err
	}
	if err := d.check(first && !retry, "PutIfAbsent(%s) stores the first request (%v) and refuses the retry (%v)", request, first, retry); err != nil {
		return err
	}

	d.advanceTo(now + demoDefaultTTL + time.Millisecond)
	_, err = d.db.Get([]byte(key))
	return d.check(errors.Is(err, mayfly.ErrNotFound), "30 minutes after the last request the session is gone: %v", err)
}
