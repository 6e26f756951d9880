// Package netguard makes tests fail when they dial anything but loopback, so offline test suites stay offline.
package netguard
