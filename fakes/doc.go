// Package fakes provides scripted chat models that answer with queued or rule-chosen responses and keep every request they were sent, so agent runs can be tested without a provider.
package fakes
