package main

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/crux-sim/crux-sim/platform/store"
	"github.com/crux-sim/crux-sim/scenarios"
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
	if err := probeStore(b); err != nil {
		return b, usagef("--store %s: %v", b, err)
	}
	return b, nil
}

// probeStore tries a PostgreSQL server once (a fresh schema, dropped at
// once), so that a wrong address or a server that is down is bad input
// with the server's answer before anything runs.
func probeStore(b store.Backend) error {
	if !b.Postgres() {
		return nil
	}
	_, remove, err := b.Open(context.Background())
	if err != nil {
		return err
	}
	return remove()
}

// probeScenarioStores tries, when no --store replaces them (flag is zero),
// the PostgreSQL servers the platform scenarios name (platform.store),
// each once: one that cannot be reached is bad input (exit 2) naming the
// scenario, as --store's is, not a run whose expectations all fail.
func probeScenarioStores(flag store.Backend, scs []*scenarios.Scenario) error {
	if !flag.IsZero() {
		return nil
	}
	tried := map[string]bool{}
	for _, sc := range scs {
		if sc.Platform == nil || !sc.Platform.Store.Postgres() || tried[sc.Platform.Store.String()] {
			continue
		}
		b := sc.Platform.Store
		tried[b.String()] = true
		if err := probeStore(b); err != nil {
			return usagef("%s: platform store %s: %v", sc.Source, b, err)
		}
	}
	return nil
}
