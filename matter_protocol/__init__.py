"""The pure Matter protocol: TLV, messages, MRP, sessions, PASE, CASE, certificates,
attestation, pairing codes and mDNS records. Sans-IO: it does no file or socket IO and
imports nothing of clusters/, twin/ or anything above: the bottom layer."""
