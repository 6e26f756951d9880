// Package fileutil writes files so that readers never see them half-written.
package fileutil
