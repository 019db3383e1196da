module cancelwire.invalid/peers/gopeer

go 1.25.0

require github.com/modelcontextprotocol/go-sdk v1.7.0
