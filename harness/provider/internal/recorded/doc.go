// Package recorded serves the third-party recordings in cassettes/thirdparty from loopback test servers, so the provider adapters' tests can prove they parse real provider traffic.
package recorded
