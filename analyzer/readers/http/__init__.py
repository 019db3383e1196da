"""HTTP as the capture and HAR readers rebuild it: HTTP/1.1 with h11, HTTP/2 with h2 (its bounds, its
events, joined mid-way), event streams, and what the answer to a POST says about the messages it carried."""
