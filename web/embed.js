// ?embed=1: the canvas and its controls only, for a blog post or a slide
// (style.css, html.embed). Loaded in the head, so the page is never drawn
// whole first; a file of its own, as the server's Content-Security-Policy
// allows no inline script.
"use strict";
if (new URLSearchParams(location.search).get("embed") === "1") document.documentElement.classList.add("embed");
