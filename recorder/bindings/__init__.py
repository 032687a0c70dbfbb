"""What each A2A protocol binding means on the wire, in one place per binding.

`jsonrpc`: the JSON-RPC binding: its methods (A2A 0.3's names too), which stream, the
envelope, the error codes, the card's JSONRPC interface.
`rest`: the HTTP+JSON binding: its routes (verb + path template), which stream, the
google.rpc.Status error envelope and each error's HTTP status, the card's HTTP+JSON interface.
`grpc`: the gRPC binding (`lf.a2a.v1.A2AService`): its method table, status codes, ProtoJSON,
the google.rpc.Status of a failed call, and how a call is held in the transcript model.
`operations`: the three side by side: each operation's name in each, each error's code in
each.
Pure: `grpc` imports the SDK's generated messages and protobuf's `json_format` lazily; the
others import nothing of the SDK.
"""
