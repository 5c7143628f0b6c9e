"""The committed v2 module is what its .proto generates: protoc (grpcio-tools) compiles
emulator/roles/proxy/messaging_v2.proto afresh and the two schemas must be equal, byte for byte
as descriptors (the generator's version line may differ, the schema may not)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from importlib import resources
from pathlib import Path

from google.protobuf import descriptor_pb2
from grpc_tools import protoc

from rmqemu.emulator.roles.proxy import messaging_v2_pb2 as v2

PROTO = Path(v2.__file__).with_name("messaging_v2.proto")


def test_generated_module_matches_its_proto(tmp_path: Path) -> None:
    out = tmp_path / "set.pb"
    well_known = resources.files("grpc_tools") / "_proto"  # google/protobuf/*.proto, shipped with protoc
    args = ["protoc", f"-I{PROTO.parent}", f"-I{well_known}", f"--descriptor_set_out={out}", PROTO.name]
    assert protoc.main(args) == 0
    fresh = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file[0]
    for message in _messages(fresh.message_type):
        for f in message.field:
            f.ClearField("json_name")  # derived from the name: a descriptor set has it, generated code does not
    committed = descriptor_pb2.FileDescriptorProto.FromString(v2.DESCRIPTOR.serialized_pb)
    assert fresh == committed


def _messages(messages: Iterable[descriptor_pb2.DescriptorProto]) -> Iterator[descriptor_pb2.DescriptorProto]:
    for m in messages:
        yield m
        yield from _messages(m.nested_type)


def test_the_service_is_the_published_one() -> None:
    service = v2.DESCRIPTOR.services_by_name["MessagingService"]
    assert service.full_name == "apache.rocketmq.v2.MessagingService"
    streams = {m.name: (m.client_streaming, m.server_streaming) for m in service.methods}
    assert streams["Telemetry"] == (True, True)
    assert streams["ReceiveMessage"] == (False, True)
    assert streams["SendMessage"] == (False, False)
    assert len(streams) == 17
