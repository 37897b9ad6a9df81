module ballotcount

go 1.22
