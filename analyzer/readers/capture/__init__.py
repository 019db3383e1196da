"""Packet captures (pcap, pcapng): one tshark pass, TCP state, HTTP/1.1 and HTTP/2 connections, bodies and
sessions, all turned into the events the text readers yield."""
