//go:build !linux

package sandbox

import "errors"

func kernelABI() (int, error) { return 0, errors.New("Landlock is Linux's") }
