"""The apache.rocketmq.v2 schema a set of generated protobuf modules carries, as plain JSON: every
message (nested ones and map entries too) with each field's name, number, type, label, type
name, oneof and proto3 ``optional``; every enum's values; every service's RPCs with their input,
output and streaming. Layout-free: which file a message sits in, comments and options are left
out, so the client's two files (``definition``, ``service``) and rmqemu's one compare equal when
the wire contract is the same.

Run by the client's venv, ``python schema.py`` prints the schema of ``rocketmq.grpc_protocol``
(one JSON object). tests/realclients/test_py5client_schema.py imports this file in the project's
venv too, to describe rmqemu's ``messaging_v2_pb2`` the same way. Only protobuf is imported here.
"""
from __future__ import annotations

import json
import sys
from typing import Any

from google.protobuf import descriptor_pb2

PACKAGE = "apache.rocketmq.v2"
LABELS = {v: k[len("LABEL_"):].lower() for k, v in descriptor_pb2.FieldDescriptorProto.Label.items()}
TYPES = {v: k[len("TYPE_"):].lower() for k, v in descriptor_pb2.FieldDescriptorProto.Type.items()}


def describe(modules: list[Any]) -> dict[str, Any]:
    """``{"messages": {full name: [fields]}, "enums": {full name: {value: number}}, "services":
    {full name: {rpc: {...}}}}`` of the generated modules (each has ``DESCRIPTOR``, a FileDescriptor)."""
    out: dict[str, Any] = {"messages": {}, "enums": {}, "services": {}}
    for module in modules:
        fdp = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(fdp)
        if fdp.package != PACKAGE:
            continue
        for enum in fdp.enum_type:
            _enum(out, PACKAGE, enum)
        for message in fdp.message_type:
            _message(out, PACKAGE, message)
        for service in fdp.service:
            out["services"][f"{PACKAGE}.{service.name}"] = {m.name: {
                "input": m.input_type.lstrip("."), "output": m.output_type.lstrip("."),
                "client_streaming": m.client_streaming, "server_streaming": m.server_streaming}
                for m in service.method}
    return out


def _enum(out: dict[str, Any], scope: str, enum: descriptor_pb2.EnumDescriptorProto) -> None:
    out["enums"][f"{scope}.{enum.name}"] = {v.name: v.number for v in enum.value}


def _message(out: dict[str, Any], scope: str, message: descriptor_pb2.DescriptorProto) -> None:
    name = f"{scope}.{message.name}"
    out["messages"][name] = {
        "map_entry": message.options.map_entry,
        "fields": [{"name": f.name, "number": f.number, "type": TYPES[f.type], "label": LABELS[f.label],
                    "type_name": f.type_name.lstrip(".") or None,
                    "oneof": message.oneof_decl[f.oneof_index].name if f.HasField("oneof_index") else None,
                    "proto3_optional": f.proto3_optional} for f in message.field]}
    for enum in message.enum_type:
        _enum(out, name, enum)
    for nested in message.nested_type:
        _message(out, name, nested)


def main() -> int:
    from rocketmq.grpc_protocol import definition_pb2, service_pb2
    json.dump(describe([definition_pb2, service_pb2]), sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
