// Package catalog is dageval's versioned table of model context windows, output limits and list prices, and turns token usage into cost.
package catalog
