// Package providertest holds the loopback servers, stream collectors and benchmark loops that the provider adapters' tests share.
package providertest
