module intervalgaps

go 1.22
