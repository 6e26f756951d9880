// Package thirdparty is an example suite that replays another project's recorded provider traffic through dageval's agent, matched in order only.
package thirdparty
