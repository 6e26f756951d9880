// Package replay connects fakes/recorder to the real provider adapters: resolvers whose models record or replay their calls through a cassette, and decoding of recorded answers the way the adapters read them.
package replay
