// Package recorder records model providers' HTTP exchanges into cassettes and replays them, choosing between replay, record, record-missing and live from the request and the environment.
package recorder
