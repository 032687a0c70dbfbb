"""What each A2A protocol binding means on the wire, in one place per binding.

`grpc`: the gRPC binding (`lf.a2a.v1.A2AService`): its method table, status codes, ProtoJSON,
the google.rpc.Status of a failed call, and how a call is held in the transcript model.
Pure apart from lazy imports of the SDK's generated messages and protobuf's `json_format`.
"""
