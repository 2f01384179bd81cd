package main

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/crux-sim/crux-sim/platform/store"
)

// storeFlag is --store: the durable store platform scenarios run on, in
// place of the one the scenario names.
type storeFlag struct {
	spec string
	// b is the store the flag names, once backend has read it.
	b store.Backend
}

func (f *storeFlag) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.spec, "store", "", "the durable store of platform scenarios: memory, postgres (the server the PG* environment variables name) "+
		"or a postgres:// URL; every run gets a fresh schema, dropped when it ends (default: the scenario's platform.store, else memory)")
}

// backend reads the flag. A PostgreSQL server is tried at once, so that
// a wrong address or a server that is down is bad usage (exit 2) with the
// server's answer, not a run that fails.
func (f *storeFlag) backend() (store.Backend, error) {
	if f.spec == "" {
		return store.Backend{}, nil
	}
	b, err := store.ParseBackend(f.spec)
	if err != nil {
		return b, usagef("--store: %v", err)
	}
	f.b = b
	if b.Postgres() {
		_, remove, err := b.Open(context.Background())
		if err != nil {
			return b, usagef("--store %s: %v", b, err)
		}
		if err := remove(); err != nil {
			return b, usagef("--store %s: %v", b, err)
		}
	}
	return b, nil
}
