// Package fakes provides scripted chat models, a local provider server and go-vcr record/replay so agent runs can be tested without a network.
package fakes
