// Package recorded serves the third-party vcrpy recordings in its testdata from loopback test servers, so the provider adapters' tests can prove they parse real provider traffic.
package recorded
