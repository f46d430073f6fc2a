// Points the game's iframe at game.html with the page's own query (the
// run a link describes). A file of its own: the server's
// Content-Security-Policy allows no inline script.
document.getElementById("game").src = "game.html" + location.search;
