#!/usr/bin/python3
"""Writes extra_signing_vectors.json: vectors beyond PROTOCOL.md's, computed with an independent
implementation (hmac/hashlib only) of PROTOCOL.md §2.2. The key date is the calendar date of the
Date header in its own offset; RFC 1123 and other forms are covered here."""
import hashlib
import hmac
import json

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
ACCESS = "AKIAIOSFODNN7EXAMPLE"


def sign(hash_name, method, target, date, key_date, host, ctype, version):
    h = getattr(hashlib, hash_name)
    body_hash = h(b"").hexdigest()
    sts = "\n".join([method, target, date, "host:" + host, "content-type:" + ctype,
                     "x-backendai-version:" + version, body_hash])
    k1 = hmac.new(SECRET.encode(), key_date.encode(), h).digest()
    k2 = hmac.new(k1, host.encode(), h).digest()
    return sts, hmac.new(k2, sts.encode(), h).hexdigest()


CASES = [
    # name, hash, method, target, date, key date, host, signed content type
    ("R1-rfc1123-gmt", "sha256", "GET", "/session/abc", "Fri, 15 Mar 2024 12:34:56 GMT",
     "20240315", "api.example.com", "text/plain"),
    ("R2-rfc1123-offset", "sha256", "GET", "/folders", "Sat, 16 Mar 2024 01:00:00 +0900",
     "20240316", "api.example.com", "text/plain"),
    ("R3-iso-negative-offset", "sha256", "POST", "/session", "2024-03-14T20:30:00-05:00",
     "20240314", "127.0.0.1:8081", "application/json"),
    ("R4-iso-z", "sha512", "DELETE", "/session/x?forced=true", "2024-12-31T23:59:59Z",
     "20241231", "h.example:8443", "text/plain"),
    ("R5-naive-utc", "sha256", "GET", "/events/session?sessionName=a%20b",
     "2024-02-29T00:00:00", "20240229", "localhost:8081", "application/octet-stream"),
]

vectors = []
for name, hash_name, method, target, date, key_date, host, ctype in CASES:
    sts, sig = sign(hash_name, method, target, date, key_date, host, ctype, "v8.20240915")
    vectors.append({
        "name": name, "hash": hash_name, "method": method, "request_target": target,
        "date": date, "key_date": key_date, "host": host, "content_type": ctype,
        "api_version": "v8.20240915", "access_key": ACCESS, "secret_key": SECRET,
        "string_to_sign": sts, "signature": sig,
    })

with open(__file__.replace("gen_extra_vectors.py", "extra_signing_vectors.json"), "w") as f:
    json.dump({"description": __doc__.strip(), "vectors": vectors}, f, indent=2)
    f.write("\n")
