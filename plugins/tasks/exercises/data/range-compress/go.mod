module rangecompress

go 1.22
