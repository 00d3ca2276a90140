// The error trap: runs before anything else and records every error (window.onerror,
// unhandled rejections, console.error, requests the page policy blocked) into the
// data-errors attribute of <html>, so a headless browser's --dump-dom shows them.
(function () {
  var errors = [];
  function note(message) {
    errors.push(String(message).slice(0, 500));
    document.documentElement.setAttribute('data-errors', JSON.stringify(errors));
  }
  window.addEventListener('error', function (e) {
    note((e.message || 'error') + (e.lineno ? ' (line ' + e.lineno + ':' + e.colno + ')' : ''));
  });
  window.addEventListener('unhandledrejection', function (e) {
    note('unhandled rejection: ' + ((e.reason && e.reason.message) || e.reason));
  });
  document.addEventListener('securitypolicyviolation', function (e) {
    note('blocked by the page policy: ' + e.violatedDirective + ' ' + e.blockedURI);
  });
  var consoleError = console.error;
  console.error = function () {
    note(Array.prototype.join.call(arguments, ' '));
    return consoleError.apply(console, arguments);
  };
  window.memlaneNoteError = note;
})();
