package storage

import "testing"

// declaring is a backend that declares its traits.
type declaring struct {
	*Mem
	t Traits
}

func (d declaring) Traits() Traits { return d.t }

// fencing is a backend that declares no traits and fences logs.
type fencing struct{ *Mem }

func (fencing) FenceLog(string) error { return nil }

// localFencer fences logs yet declares itself a local disk.
type localFencer struct{ fencing }

func (localFencer) Traits() Traits { return Traits{} }

// wrapper wraps a storage, with Unwrap.
type wrapper struct{ Storage }

func (w wrapper) Unwrap() Storage { return w.Storage }

func TestTraitsOf(t *testing.T) {
	remote := Traits{Remote: true, LockFree: true}
	for _, c := range []struct {
		name string
		s    Storage
		want Traits
	}{
		{"mem", NewMem(), Traits{}},
		{"declared", declaring{NewMem(), Traits{Remote: true}}, Traits{Remote: true}},
		{"declared through a wrapper", wrapper{declaring{NewMem(), remote}}, remote},
		{"fencer without declaration", fencing{NewMem()}, remote},
		{"fencer through a wrapper", wrapper{fencing{NewMem()}}, remote},
		{"declaration wins over fencing", localFencer{fencing{NewMem()}}, Traits{}},
		{"read-only view hides the backend", ReadOnly(declaring{NewMem(), remote}), Traits{}},
	} {
		if got := TraitsOf(c.s); got != c.want {
			t.Errorf("%s: TraitsOf = %+v, want %+v", c.name, got, c.want)
		}
	}
}
